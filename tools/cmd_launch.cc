// `ctp launch`: starts the workers of a data-parallel job on this node with
// Paddle's and torchrun's variables set, prefixes their output with their
// rank, and stops them all (exiting non-zero, naming the rank and how it
// failed) when one fails.
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <optional>
#include <cstring>

#include "executor/worker_env.h"
#include "program_ir/error.h"
#include "tools/command.h"
#include "tools/launch_plan.h"
#include "tools/launch_supervisor.h"

extern char** environ;

namespace ctp::cli {
namespace {

struct LaunchArgs {
  int nproc = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master;
  int base_port = 0;
  std::optional<double> timeout_s;  // unset: CTP_COMM_TIMEOUT, else 300
  double grace_s = 10;
  std::vector<std::string> command;
};

std::chrono::milliseconds seconds_option(double s, const char* name) {
  try {
    return timeout_from_seconds(s, name);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

// --timeout, else the CTP_COMM_TIMEOUT the launcher was started with (the
// workers then see the value the user set), else 300 s.
std::chrono::milliseconds worker_timeout(const LaunchArgs& args, const Environment& env) {
  if (args.timeout_s) return seconds_option(*args.timeout_s, "--timeout");
  if (auto it = env.find("CTP_COMM_TIMEOUT"); it != env.end())
    return timeout_from_text(it->second, "CTP_COMM_TIMEOUT");
  return std::chrono::seconds(300);
}

void run_launch(const LaunchArgs& args) {
  launch::LaunchOptions options;
  options.nproc = args.nproc;
  options.nnodes = args.nnodes;
  options.node_rank = args.node_rank;
  if (args.nproc < 1) throw UsageError("--nproc must be at least 1");
  if (args.nnodes < 1) throw UsageError("--nnodes must be at least 1");
  if (args.node_rank < 0 || args.node_rank >= args.nnodes)
    throw UsageError("--node-rank " + std::to_string(args.node_rank) + " is not below --nnodes " +
                     std::to_string(args.nnodes));
  if (!args.master.empty()) {
    try {
      options.master = net::parse_endpoint(args.master, "--master");
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  }
  if (args.nnodes > 1 && !options.master) throw UsageError("--nnodes > 1 needs --master HOST:PORT");
  if (args.base_port != 0) {
    if (args.base_port < 1 || args.base_port > 65535) throw UsageError("--base-port must be 1..65535");
    options.base_port = args.base_port;
  }
  const Environment inherited = environment_from(environ);
  options.timeout = worker_timeout(args, inherited);
  options.grace = seconds_option(args.grace_s, "--grace");
  if (args.command.empty()) throw UsageError("no program to launch: ctp launch [options] -- PROGRAM ARGS...");
  options.command = args.command;

  // A reader that goes away (`ctp launch ... | head`) must not kill the
  // launcher silently and orphan its workers: writes then fail with EPIPE,
  // and the supervisor stops the job and says so. Workers get the default
  // back (spawn resets it).
  ::signal(SIGPIPE, SIG_IGN);
  launch::LaunchPlan plan = launch::plan_launch(options, inherited);
  launch::LaunchResult result = launch::supervise(plan, options.command, options.grace);
  if (result.ok()) return;

  std::string others;
  for (int i = 0; i < static_cast<int>(result.ends.size()); ++i) {
    if (i == result.first_failure) continue;
    const auto& e = result.ends[i];
    others += (others.empty() ? "" : ", ") + std::string("rank ") + std::to_string(e.rank) + " " +
              (e.exited && e.code == 0 ? "succeeded" : e.describe());
  }
  if (result.first_failure < 0 && !result.output_error.empty())
    throw Error("cannot write the workers' output to " + result.output_error +
                ": stopped the job; the workers: " + others);
  if (result.first_failure < 0)
    throw Error("interrupted by SIG" + std::string(sigabbrev_np(result.interrupted_by)) +
                "; the workers: " + others);
  const auto& first = result.ends[result.first_failure];
  throw Error("rank " + std::to_string(first.rank) + " (pid " + std::to_string(first.pid) +
              ") failed first: it " + first.describe() +
              (others.empty() ? "" : "; then " + others) +
              (result.output_error.empty() ? ""
                                           : "; and the workers' output could not be written to " +
                                                 result.output_error));
}

const CommandRegistrar kLaunch([](CLI::App& app) {
  auto args = std::make_shared<LaunchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "launch",
      "Start N workers of a data-parallel job on this node (ctp launch --nproc 2 -- PROGRAM ARGS). "
      "Each gets Paddle's variables (PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM, "
      "PADDLE_TRAINER_ENDPOINTS, PADDLE_CURRENT_ENDPOINT, FLAGS_selected_gpus) and torchrun's "
      "(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT); its output lines are prefixed "
      "with [rank R]; if one fails, the others are stopped and ctp exits 1 naming it.");
  cmd->add_option("--nproc", args->nproc, "workers on this node")->required();
  cmd->add_option("--nnodes", args->nnodes, "nodes in the job (each runs ctp launch)");
  cmd->add_option("--node-rank", args->node_rank, "this node's index, 0..nnodes-1");
  cmd->add_option("--master", args->master,
                  "HOST:PORT of node 0, where the nodes exchange their endpoints (needed with --nnodes > 1)");
  cmd->add_option("--base-port", args->base_port,
                  "worker endpoints at PORT, PORT+1, ... (default: free ports)");
  cmd->add_option("--timeout", args->timeout_s,
                  "seconds workers wait for a peer at rendezvous and in each collective "
                  "(exported as CTP_COMM_TIMEOUT; default: the CTP_COMM_TIMEOUT ctp launch was started "
                  "with, else 300)");
  cmd->add_option("--grace", args->grace_s,
                  "seconds the other workers get to exit on their own after one fails (default 10)");
  cmd->add_option("command", args->command, "the program and its arguments, after --")->required();
  cmd->callback([args] { run_launch(*args); });
});

}  // namespace
}  // namespace ctp::cli
