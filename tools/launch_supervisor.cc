#include "tools/launch_supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "program_ir/error.h"
#include "tools/launch_guardian.h"

namespace ctp::launch {
namespace {

using Clock = std::chrono::steady_clock;

// The signal handlers only write the signal number here; the loop reads it.
int g_signal_pipe = -1;

void on_signal(int sig) {
  int saved = errno;
  unsigned char s = static_cast<unsigned char>(sig);
  if (g_signal_pipe >= 0) (void)!::write(g_signal_pipe, &s, 1);
  errno = saved;
}

// False when the reader is gone or the output cannot take more (EPIPE with
// SIGPIPE ignored, ENOSPC, ...), with errno set.
bool write_all(int fd, const std::string& text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

// The first failure to write the launcher's own output; later writes to a
// failed stream are dropped (the workers' pipes are still drained).
struct OutputHealth {
  int failed_fd = -1;
  std::string error;  // "standard output: Broken pipe"
  bool write(int fd, const std::string& text) {
    if (fd == failed_fd) return false;
    if (write_all(fd, text)) return true;
    if (error.empty()) {
      error = std::string(fd == 1 ? "standard output" : fd == 2 ? "standard error" : "fd " + std::to_string(fd)) +
              ": " + std::strerror(errno);
      failed_fd = fd;
    }
    return false;
  }
};

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// One output stream of one worker: bytes become "[rank R] line\n".
struct Stream {
  int fd = -1;
  int dest = 1;
  std::string prefix;
  std::string pending;
  OutputHealth* output = nullptr;

  void emit_lines(bool flush_partial) {
    std::size_t start = 0;
    std::string out;
    for (std::size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1)
      out += prefix + pending.substr(start, nl - start + 1);
    pending.erase(0, start);
    // A very long line without a newline is passed on in pieces.
    if (!pending.empty() && (flush_partial || pending.size() > 65536)) {
      out += prefix + pending + "\n";
      pending.clear();
    }
    if (!out.empty() && output) output->write(dest, out);
  }
  // False at EOF.
  bool drain() {
    char buf[16384];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n > 0) {
        pending.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      emit_lines(n == 0);
      return n != 0;  // n < 0: EAGAIN, more later
    }
  }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

struct Worker {
  const WorkerPlan* plan = nullptr;
  pid_t pid = -1;
  Stream out, err;
  bool running = false;
  WorkerEnd end;
};

// Builds everything exec needs before fork, so the child only calls
// async-signal-safe functions.
pid_t spawn(const WorkerPlan& plan, const std::vector<std::string>& command, int out_w, int err_w) {
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : plan.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = command;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::string exec_error = "ctp launch: cannot run '" + command[0] + "': ";
  const pid_t launcher = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) throw Error("fork failed: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group, so stopping it stops its children too
    // Dies with the launcher, however the launcher ends; if the launcher is
    // already gone, the worker never starts.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != launcher) ::_exit(127);
    int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(out_w, 1);
    ::dup2(err_w, 2);
    for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE, SIGHUP}) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvpe(argv[0], argv.data(), envp.data());
    int err = errno;
    (void)!::write(2, exec_error.data(), exec_error.size());
    const char* why = std::strerror(err);
    (void)!::write(2, why, std::strlen(why));
    (void)!::write(2, "\n", 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  return pid;
}

class SignalScope {
 public:
  SignalScope() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
      throw Error("pipe failed: " + std::string(std::strerror(errno)));
    read_ = fds[0];
    g_signal_pipe = fds[1];
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int i = 0; i < 4; ++i) ::sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~SignalScope() {
    for (int i = 0; i < 4; ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
    ::close(g_signal_pipe);
    g_signal_pipe = -1;
    ::close(read_);
  }
  int fd() const { return read_; }

 private:
  static constexpr int kSignals[4] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};
  struct sigaction old_[4];
  int read_ = -1;
};

// One run of the workers: start, forward output, reap, stop on failure.
class Supervisor {
 public:
  Supervisor(const LaunchPlan& plan, const std::vector<std::string>& command,
             std::chrono::milliseconds grace, int out_fd, int err_fd)
      : plan_(plan), command_(command), grace_(grace), out_fd_(out_fd), err_fd_(err_fd),
        guardian_(plan.workers.size()), workers_(plan.workers.size()) {}

  LaunchResult run() {
    start_all();
    while (running_count() > 0 || open_streams() > 0) {
      poll_once();
      take_signals();
      reap();
      advance_deadlines();
    }
    for (Worker& w : workers_) result_.ends.push_back(w.end);
    result_.output_error = output_.error;
    return result_;
  }

 private:
  using TimePoint = Clock::time_point;
  static constexpr TimePoint kNever = TimePoint::max();

  void note(const std::string& text) { output_.write(err_fd_, "ctp launch: " + text + "\n"); }

  void start_all() {
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      try {
        start(i);
      } catch (const Error& e) {
        // None of the job may run without the rest: stop those started.
        for (std::size_t j = 0; j < i; ++j) {
          ::kill(-workers_[j].pid, SIGKILL);
          while (::waitpid(workers_[j].pid, nullptr, 0) < 0 && errno == EINTR) {
          }
          guardian_.forget(workers_[j].pid);
          workers_[j].out.close();
          workers_[j].err.close();
        }
        throw Error("cannot start rank " + std::to_string(plan_.workers[i].rank) + ": " + e.what() +
                    (i ? "; killed the " + std::to_string(i) + " worker(s) already started" : ""));
      }
    }
  }

  void start(std::size_t i) {
    Worker& w = workers_[i];
    w.plan = &plan_.workers[i];
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0)
      throw Error("pipe failed: " + std::string(std::strerror(errno)));
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
      int err = errno;
      ::close(out_pipe[0]);
      ::close(out_pipe[1]);
      throw Error("pipe failed: " + std::string(std::strerror(err)));
    }
    try {
      w.pid = spawn(*w.plan, command_, out_pipe[1], err_pipe[1]);
    } catch (...) {
      for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
      throw;
    }
    guardian_.watch(w.pid);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    std::string prefix = "[rank " + std::to_string(w.plan->rank) + "] ";
    w.out = Stream{out_pipe[0], out_fd_, prefix, {}, &output_};
    w.err = Stream{err_pipe[0], err_fd_, prefix, {}, &output_};
    for (int fd : {out_pipe[0], err_pipe[0]}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    w.running = true;
    w.end.rank = w.plan->rank;
    w.end.pid = w.pid;
    note("started rank " + std::to_string(w.plan->rank) + " (pid " + std::to_string(w.pid) +
         ") at " + w.plan->endpoint);
  }

  int running_count() const {
    int n = 0;
    for (const Worker& w : workers_) n += w.running;
    return n;
  }
  int open_streams() const {
    int n = 0;
    for (const Worker& w : workers_) n += (w.out.fd >= 0) + (w.err.fd >= 0);
    return n;
  }

  void signal_all(int sig) {
    for (Worker& w : workers_)
      if (w.running) {
        if (sig == SIGTERM || sig == SIGKILL) w.end.stopped_by_launcher = true;
        ::kill(-w.pid, sig);
      }
  }

  // Stops every worker (SIGTERM now, SIGKILL after the grace period).
  void stop_all() {
    signal_all(SIGTERM);
    stopping_ = true;
    kill_at_ = Clock::now() + grace_;
  }

  void poll_once() {
    std::vector<pollfd> fds{{signals_.fd(), POLLIN, 0}};
    std::vector<Stream*> streams;
    for (Worker& w : workers_)
      for (Stream* s : {&w.out, &w.err})
        if (s->fd >= 0) {
          fds.push_back({s->fd, POLLIN, 0});
          streams.push_back(s);
        }
    ::poll(fds.data(), fds.size(), 100);
    for (std::size_t i = 0; i < streams.size(); ++i)
      if (fds[i + 1].revents && !streams[i]->drain()) streams[i]->close();
  }

  void take_signals() {
    unsigned char sig;
    while (::read(signals_.fd(), &sig, 1) == 1) {
      if (sig == SIGCHLD || result_.interrupted_by) continue;
      result_.interrupted_by = sig;
      note("interrupted by " + signal_name(sig) + ": stopping every worker");
      stop_all();
    }
    // The launcher's own output failed (its reader went away, a full disk):
    // a job whose output is lost is stopped, and the launcher says why.
    if (!output_.error.empty() && !output_stop_noted_) {
      output_stop_noted_ = true;
      note("cannot write the workers' output to " + output_.error + ": stopping every worker");
      if (!stopping_ && running_count() > 0) stop_all();
    }
  }

  void reap() {
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      Worker& w = workers_[i];
      if (!w.running) continue;
      int status = 0;
      if (::waitpid(w.pid, &status, WNOHANG) != w.pid) continue;
      w.running = false;
      w.end.exited = WIFEXITED(status);
      w.end.code = WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
      bool failed = !w.end.exited || w.end.code != 0;
      if (failed)
        note("rank " + std::to_string(w.end.rank) + " (pid " + std::to_string(w.pid) + ") " +
             w.end.describe());
      if (failed && result_.first_failure < 0 && !stopping_) {
        result_.first_failure = static_cast<int>(i);
        if (running_count() > 0 && !stopping_) {
          note("rank " + std::to_string(w.end.rank) + " failed: the other " +
               std::to_string(running_count()) + " worker(s) get " + net::duration_text(grace_) +
               " to exit on their own, then are stopped");
          stop_at_ = Clock::now() + grace_;
        }
      }
    }
  }

  void advance_deadlines() {
    auto now = Clock::now();
    if (now >= stop_at_ && !stopping_ && running_count() > 0) {
      note("stopping the " + std::to_string(running_count()) + " remaining worker(s)");
      stop_all();
      kill_at_ = now + std::chrono::seconds(5);
    }
    if (now >= kill_at_ && running_count() > 0) {
      signal_all(SIGKILL);
      kill_at_ = kNever;
    }
    // A worker's children may hold its pipes open after it ended.
    if (running_count() == 0 && pipes_close_at_ == kNever) pipes_close_at_ = now + std::chrono::seconds(1);
    if (now >= pipes_close_at_)
      for (Worker& w : workers_) {
        w.out.emit_lines(true);
        w.err.emit_lines(true);
        w.out.close();
        w.err.close();
      }
  }

  const LaunchPlan& plan_;
  const std::vector<std::string>& command_;
  std::chrono::milliseconds grace_;
  int out_fd_, err_fd_;
  SignalScope signals_;
  Guardian guardian_;
  std::vector<Worker> workers_;
  OutputHealth output_;
  LaunchResult result_;
  bool stopping_ = false;
  bool output_stop_noted_ = false;
  TimePoint stop_at_ = kNever, kill_at_ = kNever, pipes_close_at_ = kNever;
};

}  // namespace

std::string WorkerEnd::describe() const {
  std::string how = exited ? "exit code " + std::to_string(code)
                           : "signal " + std::to_string(code) + " (" + signal_name(code) + ")";
  if (stopped_by_launcher) return "was stopped by the launcher (" + how + ")";
  return exited ? "exited with code " + std::to_string(code) : "was killed by " + how;
}

LaunchResult supervise(const LaunchPlan& plan, const std::vector<std::string>& command,
                       std::chrono::milliseconds grace, int out_fd, int err_fd) {
  return Supervisor(plan, command, grace, out_fd, err_fd).run();
}

}  // namespace ctp::launch
