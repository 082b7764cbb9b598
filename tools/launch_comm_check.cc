// `ctp comm-check`: a worker that checks the job's communication, run under
// a launcher (ctp launch, mpirun with PADDLE_* set, ...). It sets ring 0 up
// the way transpiled programs do (c_gen_nccl_id + c_comm_init, through the
// same kernels) and all-reduces a known tensor every step, checking the sum.
// Use it to see that the nodes reach each other before a real job, and how
// a job behaves when a worker dies (the survivors name it and exit 1).
#include <cstdio>
#include <cstring>
#include <thread>

#include "executor/runtime/communicator.h"
#include "executor/runtime/kernel.h"
#include "executor/rendezvous/rendezvous_socket.h"
#include "executor/worker_env.h"
#include "program_ir/builder.h"
#include "program_ir/error.h"
#include "tools/command.h"

extern char** environ;

namespace ctp::cli {
namespace {

struct CommCheckArgs {
  int steps = 10;
  int64_t elements = 1024;
  int interval_ms = 0;
};

void say(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);  // a pipe to the launcher is block-buffered otherwise
}

void run_ops(const Block& block, Scope& scope, RunServices& services) {
  for (const Op& op : block.ops()) {
    const KernelFn* fn = KernelRegistry::global().find(op.type, DeviceKind::CPU);
    if (!fn) throw Error("no CPU kernel for op '" + op.type + "'");
    KernelContext ctx(op, block, scope, services);
    (*fn)(ctx);
  }
}

void run_comm_check(const CommCheckArgs& args) {
  if (args.steps < 0 || args.elements < 1 || args.interval_ms < 0)
    throw UsageError("--steps, --elements and --interval-ms must be positive");
  WorkerIdentity id = worker_identity(environment_from(environ));
  std::vector<std::string> endpoints = id.endpoints;
  if (endpoints.empty()) {
    if (id.world_size > 1)
      throw Error("comm-check needs every rank's endpoint: run it under 'ctp launch', or set "
                  "PADDLE_TRAINER_ENDPOINTS and PADDLE_TRAINER_ID");
    endpoints.push_back("127.0.0.1:" + std::to_string(net::pick_free_port()));
  }
  CommOptions options;
  options.job_id = id.job_id;
  if (id.comm_timeout) options.timeout = *id.comm_timeout;
  CommunicatorManager comms(options);
  RunServices services;
  services.comms = &comms;
  Scope scope;

  ProgramBuilder startup;
  Var id_var;
  id_var.name = "comm_check_id";
  id_var.type = VarKind::RAW;
  startup.var(id_var);
  std::vector<std::string> others;
  for (int r = 0; r < id.world_size; ++r)
    if (r != id.rank) others.push_back(endpoints[r]);
  startup.op("c_gen_nccl_id").out("Out", "comm_check_id").attr("rank", int32_t{id.rank})
      .attr("endpoint", endpoints[id.rank]).attr("other_endpoints", others);
  startup.op("c_comm_init").in("X", "comm_check_id").attr("nranks", int32_t{id.world_size})
      .attr("rank", int32_t{id.rank}).attr("ring_id", int32_t{0});
  run_ops(startup.program().global_block(), scope, services);
  Communicator& ring = comms.get(0);
  say("comm-check: rank " + std::to_string(id.rank) + " of " + std::to_string(id.world_size) +
      " at " + endpoints[id.rank] + ": ring 0 is up (" + ring.backend() + ", timeout " +
      net::duration_text(options.timeout) + ")");

  ProgramBuilder step_program;
  step_program.op("c_allreduce_sum").in("X", "grad").out("Out", "grad").attr("ring_id", int32_t{0});
  const Block& step_block = step_program.program().global_block();
  double world = id.world_size;
  for (int step = 0; step < args.steps; ++step) {
    Tensor grad(DataType::FP32, {args.elements});
    float* g = grad.data<float>();
    for (int64_t i = 0; i < args.elements; ++i) g[i] = static_cast<float>((id.rank + 1) * (step + 1));
    scope.var("grad") = grad;
    auto start = std::chrono::steady_clock::now();
    run_ops(step_block, scope, services);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const float* out = scope.get("grad").data<float>();
    float expect = static_cast<float>((step + 1) * world * (world + 1) / 2);
    for (int64_t i = 0; i < args.elements; ++i)
      if (out[i] != expect)
        throw Error("comm-check: step " + std::to_string(step) + ": element " + std::to_string(i) +
                    " is " + std::to_string(out[i]) + ", expected " + std::to_string(expect));
    char line[160];
    std::snprintf(line, sizeof(line), "step %d: all-reduce of %lld FP32 ok (%.2f ms)", step,
                  static_cast<long long>(args.elements), ms);
    say(line);
    if (args.interval_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(args.interval_ms));
  }
  ring.barrier();
  say("comm-check: " + std::to_string(args.steps) + " steps agree across " +
      std::to_string(id.world_size) + " ranks");
}

const CommandRegistrar kCommCheck([](CLI::App& app) {
  auto args = std::make_shared<CommCheckArgs>();
  CLI::App* cmd = app.add_subcommand(
      "comm-check",
      "Check a job's communication from inside it: run under 'ctp launch --nproc N -- ctp "
      "comm-check'. Sets ring 0 up as transpiled programs do and all-reduces a known tensor "
      "each step, checking the result.");
  cmd->add_option("--steps", args->steps, "all-reduce steps (default 10)");
  cmd->add_option("--elements", args->elements, "FP32 elements per all-reduce (default 1024)");
  cmd->add_option("--interval-ms", args->interval_ms, "pause between steps (default 0)");
  cmd->callback([args] { run_comm_check(*args); });
});

}  // namespace
}  // namespace ctp::cli
