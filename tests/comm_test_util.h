// Helpers for the communication tests: run ops through the kernel registry
// (no Executor needed), and run one function per rank in forked processes
// with a hard deadline, collecting each rank's outcome.
#pragma once
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "executor/runtime/communicator.h"
#include "executor/runtime/kernel.h"
#include "executor/rendezvous/rendezvous_socket.h"
#include "program_ir/builder.h"

namespace ctp::testing_comm {

// Runs every op of `block` through its CPU kernel, in order.
inline void run_block(const Block& block, Scope& scope, RunServices& services) {
  for (const Op& op : block.ops()) {
    const KernelFn* fn = KernelRegistry::global().find(op.type, DeviceKind::CPU);
    if (!fn) throw Error("no CPU kernel for op '" + op.type + "'");
    KernelContext ctx(op, block, scope, services);
    (*fn)(ctx);
  }
}

inline std::vector<std::string> local_endpoints(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("127.0.0.1:" + std::to_string(net::pick_free_port()));
  return out;
}

// Appends Paddle's communicator set-up for one ring, as the transpiler does.
inline void add_comm_init(ProgramBuilder& pb, const std::vector<std::string>& endpoints, int rank,
                          int ring_id, bool multitrainer = false) {
  std::string id_var = "comm_id_" + std::to_string(ring_id);
  Var v;
  v.name = id_var;
  v.type = VarKind::RAW;
  v.persistable = true;
  pb.var(v);
  std::vector<std::string> others;
  for (int i = 0; i < static_cast<int>(endpoints.size()); ++i)
    if (i != rank) others.push_back(endpoints[i]);
  pb.op("c_gen_nccl_id").out("Out", id_var).attr("rank", rank)
      .attr("endpoint", endpoints[rank]).attr("other_endpoints", others);
  int nranks = static_cast<int>(endpoints.size());
  if (multitrainer)
    pb.op("c_comm_init_multitrainer").in("X", id_var).attr("ntrainers", nranks)
        .attr("trainer_id", rank).attr("ring_id", ring_id);
  else
    pb.op("c_comm_init").in("X", id_var).attr("nranks", nranks).attr("rank", rank)
        .attr("ring_id", ring_id);
}

// Sets a rank up over `endpoints` (rings 0 .. rings-1), then runs `body`.
inline void as_rank(int rank, const std::vector<std::string>& endpoints,
                    std::chrono::milliseconds timeout,
                    const std::function<void(Scope&, RunServices&, CommunicatorManager&)>& body,
                    int rings = 1) {
  CommunicatorManager comms(CommOptions{timeout, std::chrono::milliseconds(20)});
  RunServices services;
  services.comms = &comms;
  Scope scope;
  ProgramBuilder startup;
  for (int ring = 0; ring < rings; ++ring) add_comm_init(startup, endpoints, rank, ring);
  run_block(startup.program().global_block(), scope, services);
  body(scope, services, comms);
}

struct RankOutcome {
  int rank = 0;
  bool exited = false;  // false: killed by a signal
  int code = 0;         // exit code or signal number
  std::string message;  // what the rank wrote (its error, or "ok")
  double seconds = 0;   // from the start until it ended
  bool ok() const { return exited && code == 0; }
};

// Forks `n` children running body(rank); a child that returns exits 0 with
// "ok", one that throws exits 1 with the exception's text. Children still
// running at the deadline are killed (reported as SIGKILL).
inline std::vector<RankOutcome> run_ranks(int n, const std::function<void(int)>& body,
                                          std::chrono::seconds deadline = std::chrono::seconds(60)) {
  struct Child {
    pid_t pid;
    int fd;
    std::string text;
    bool done = false;
  };
  // Tests that ran before may have left a large, fragmented heap (freed but
  // kept by malloc). Consolidate and release it once here: otherwise every
  // child consolidates it on its first allocation, copying the whole heap on
  // write, which takes tens of seconds after a million-op test.
  ::malloc_trim(0);
  auto start = std::chrono::steady_clock::now();
  std::vector<Child> children;
  for (int r = 0; r < n; ++r) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe failed");
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      std::string message = "ok";
      int code = 0;
      try {
        body(r);
      } catch (const std::exception& e) {
        message = e.what();
        code = 1;
      }
      (void)!::write(fds[1], message.data(), message.size());
      ::_exit(code);
    }
    ::close(fds[1]);
    children.push_back({pid, fds[0], ""});
  }
  std::vector<RankOutcome> out(n);
  int remaining = n;
  while (remaining > 0) {
    for (int r = 0; r < n; ++r) {
      Child& c = children[r];
      if (c.done) continue;
      char buf[4096];
      ssize_t got;
      while ((got = ::read(c.fd, buf, sizeof(buf))) > 0) c.text.append(buf, got);
      int status = 0;
      if (::waitpid(c.pid, &status, WNOHANG) == c.pid) {
        while ((got = ::read(c.fd, buf, sizeof(buf))) > 0) c.text.append(buf, got);
        ::close(c.fd);
        c.done = true;
        --remaining;
        out[r].rank = r;
        out[r].exited = WIFEXITED(status);
        out[r].code = WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
        out[r].message = c.text;
        out[r].seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
    }
    if (std::chrono::steady_clock::now() - start > deadline)
      for (Child& c : children)
        if (!c.done) ::kill(c.pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return out;
}

inline std::string describe(const std::vector<RankOutcome>& outcomes) {
  std::string s;
  for (const auto& o : outcomes)
    s += "rank " + std::to_string(o.rank) + (o.exited ? " exit " : " signal ") +
         std::to_string(o.code) + " after " + std::to_string(o.seconds) + " s: " + o.message + "\n";
  return s;
}

inline void require(bool condition, const std::string& what) {
  if (!condition) throw std::runtime_error("check failed: " + what);
}

}  // namespace ctp::testing_comm
