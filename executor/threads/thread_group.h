// The single-process multi-device modes (c_comm_init_all): one process
// drives several devices, one thread each, and their collectives meet in
// shared memory. A ThreadGroup is what those threads share; each thread gets
// its own in-process Communicator per ring from it.
//
// Every collective checks that all threads called the same op on the same
// dtype and element count (a mismatch is an error on every thread, never a
// hang or silent corruption), and every wait has the group's timeout. When
// one thread fails or times out, the whole group is aborted, so the other
// threads end with an error too instead of waiting forever.
#pragma once
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "executor/runtime/communicator.h"

namespace ctp {

class ThreadGroup : public LocalGroup, public std::enable_shared_from_this<ThreadGroup> {
 public:
  ThreadGroup(int size, CommOptions options);
  ~ThreadGroup() override;
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;

  int size() const override { return size_; }
  const CommOptions& options() const { return options_; }

  // The in-process communicator of thread `local_rank` on `ring_id`. The
  // group must be owned by a shared_ptr (communicators keep it alive).
  std::unique_ptr<Communicator> make_communicator(int local_rank, int ring_id);

  // Every thread calls this once; all return local rank 0's `bytes` (how
  // c_gen_nccl_id hands the unique id that one thread fetched to the others).
  std::string share_from_leader(int local_rank, const std::string& bytes,
                                std::string_view what) override;

  // Ends every pending and future wait of the group with an error.
  void abort(const std::string& reason) override;
  bool aborted() const;

  // A point where all threads of the group meet, with per-arrival payloads;
  // used by the communicators of one ring (the details live in the .cc).
  class Meeting;
  Meeting& meeting(int channel);

 private:
  friend class Meeting;
  const int size_;
  const CommOptions options_;
  mutable std::mutex mu_;  // guards meetings_, aborted_, abort_reason_
  std::map<int, std::unique_ptr<Meeting>> meetings_;
  bool aborted_ = false;
  std::string abort_reason_;
};

}  // namespace ctp
