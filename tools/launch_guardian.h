// Keeps `ctp launch`'s workers from outliving it. A guardian process, forked
// before the first worker, is told each worker's process group over a pipe.
// If the launcher dies without saying goodbye (SIGKILL, a crash), the pipe
// reaches end-of-file and the guardian kills every group it was told of, so
// no worker and none of its children keep running. The workers also have
// PR_SET_PDEATHSIG (spawn): that covers them even if the guardian is killed
// together with the launcher; the guardian covers their children.
#pragma once
#include <sys/types.h>

#include <vector>

namespace ctp::launch {

class Guardian {
 public:
  // Forks the guardian; `capacity` bounds the groups it will be told of.
  explicit Guardian(std::size_t capacity);
  // Releases the guardian (it exits without killing anything): the launcher
  // has ended every worker itself.
  ~Guardian();
  Guardian(const Guardian&) = delete;
  Guardian& operator=(const Guardian&) = delete;

  // A worker's process group to kill if the launcher dies.
  void watch(pid_t group);
  // The launcher has reaped that worker and stopped its group.
  void forget(pid_t group);

 private:
  void send(int value);
  int write_fd_ = -1;
  pid_t pid_ = -1;
};

}  // namespace ctp::launch
