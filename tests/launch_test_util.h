// Running the ctp tool from the launcher's tests: its exit, its output as it
// grows, and the pids of the workers it reports.
#pragma once
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "executor/rendezvous/rendezvous_socket.h"

namespace ctp::test {

struct CliRun {
  bool exited = false;
  int code = -1;
  std::string output;  // stdout and stderr, interleaved
  double seconds = 0;
};

// Runs the ctp tool with `args`; `watch` sees the output so far as it grows.
// The tool is killed if it outlives `deadline`.
// With `own_group` the tool leads a process group of its own (so a test can
// signal the tool and whatever it started in that group at once).
inline CliRun run_ctp(const std::vector<std::string>& args,
                      const std::function<void(const std::string&, pid_t)>& watch = {},
                      std::chrono::seconds deadline = std::chrono::seconds(60),
                      bool own_group = false) {
  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  std::vector<std::string> argv_s = {CTP_CLI_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    if (own_group) ::setpgid(0, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  CliRun run;
  bool eof = false, killed = false;
  for (;;) {
    if (!eof) {
      pollfd p{fds[0], POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) {
        char buf[4096];
        ssize_t n = ::read(fds[0], buf, sizeof(buf));
        if (n <= 0) eof = true;
        else run.output.append(buf, static_cast<std::size_t>(n));
        if (watch) watch(run.output, pid);
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    int status = 0;
    if (eof && ::waitpid(pid, &status, WNOHANG) == pid) {
      run.exited = WIFEXITED(status);
      run.code = WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
      break;
    }
    if (!killed && std::chrono::steady_clock::now() - start > deadline) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
  }
  ::close(fds[0]);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

inline bool has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// The whole line of `text` that starts with `start`, or "".
inline std::string line_starting(const std::string& text, const std::string& start) {
  std::size_t at = text.rfind("\n" + start);
  if (at == std::string::npos) {
    if (text.rfind(start, 0) != 0) return "";
    at = 0;
  } else {
    ++at;
  }
  return text.substr(at, text.find('\n', at) - at);
}

// The value after "key=" up to the next space in `line`.
inline std::string field(const std::string& line, const std::string& key) {
  std::size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) return "";
  at += key.size() + 2;
  return line.substr(at, line.find(' ', at) - at);
}

// The pid in "started rank R (pid N)", or 0 before that line arrives.
inline pid_t started_pid(const std::string& text, int rank) {
  std::string marker = "started rank " + std::to_string(rank) + " (pid ";
  std::size_t at = text.find(marker);
  if (at == std::string::npos || text.find(')', at) == std::string::npos) return 0;
  return static_cast<pid_t>(std::stol(text.substr(at + marker.size())));
}

// Whether `pid` still runs: it exists and is not a zombie (an orphan's
// zombie may linger where the container's init does not reap).
inline bool process_runs(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  std::size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

// Waits up to `limit` for every pid to stop running; returns those still running.
inline std::vector<pid_t> still_running_after(const std::vector<pid_t>& pids, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    std::vector<pid_t> running;
    for (pid_t p : pids)
      if (process_runs(p)) running.push_back(p);
    if (running.empty() || std::chrono::steady_clock::now() >= end) return running;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// A free port P whose neighbour P+1 is free too (for --base-port with two
// workers); 0 when none was found.
inline int free_port_pair() {
  for (int tries = 0; tries < 20; ++tries) {
    const int p = net::pick_free_port();
    try {
      if (p < 65535) net::listen_on("127.0.0.1", p + 1, "probe");
      return p;
    } catch (const Error&) {
    }
  }
  return 0;
}

}  // namespace ctp::test
