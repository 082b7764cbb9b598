#include "tools/launch_guardian.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "program_ir/error.h"

namespace ctp::launch {
namespace {

// The guardian's whole life. It runs in a child forked from a process that
// may have threads, so it calls only async-signal-safe functions, into
// memory allocated before the fork.
[[noreturn]] void guard(int read_fd, pid_t* groups, std::size_t capacity) {
  // Signals meant for the job go to the launcher, which stops the workers
  // itself and then releases the guardian.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT}) ::signal(sig, SIG_IGN);
  // Hold none of the launcher's output open, so its readers see EOF when
  // the launcher ends.
  int null_fd = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3; ++fd)
    if (null_fd >= 0) ::dup2(null_fd, fd);
  std::size_t count = 0;
  for (;;) {
    int value = 0;
    ssize_t n = ::read(read_fd, &value, sizeof value);
    if (n < 0 && errno == EINTR) continue;
    if (n == static_cast<ssize_t>(sizeof value)) {
      if (value == 0) ::_exit(0);  // released
      if (value > 0 && count < capacity) groups[count++] = value;
      if (value < 0)
        for (std::size_t i = 0; i < count; ++i)
          if (groups[i] == -value) groups[i] = groups[--count];
      continue;
    }
    // End of file (or a broken pipe): the launcher is gone.
    for (std::size_t i = 0; i < count; ++i) ::kill(-groups[i], SIGKILL);
    ::_exit(0);
  }
}

}  // namespace

Guardian::Guardian(std::size_t capacity) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw Error("cannot start the launcher's guardian: pipe failed: " +
                std::string(std::strerror(errno)));
  std::vector<pid_t> groups(capacity + 1);
  pid_ = ::fork();
  if (pid_ < 0) {
    int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error("cannot start the launcher's guardian: fork failed: " + std::string(std::strerror(err)));
  }
  if (pid_ == 0) {
    ::close(fds[1]);
    guard(fds[0], groups.data(), groups.size());
  }
  ::close(fds[0]);
  write_fd_ = fds[1];
}

Guardian::~Guardian() {
  send(0);
  ::close(write_fd_);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

void Guardian::watch(pid_t group) { send(group); }
void Guardian::forget(pid_t group) { send(-group); }

void Guardian::send(int value) {
  // Four bytes are written whole to a pipe (PIPE_BUF). A guardian that died
  // cannot be told; the workers' PR_SET_PDEATHSIG still covers them.
  while (::write(write_fd_, &value, sizeof value) < 0 && errno == EINTR) {
  }
}

}  // namespace ctp::launch
