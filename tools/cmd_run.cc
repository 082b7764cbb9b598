// `ctp run`: runs a startup program once and a main program for K steps on
// synthetic or .npy-fed inputs, printing the fetched values of every step.
// Under `ctp launch` each worker runs it; the collective ops in the programs
// find their peers through the communicator manager it creates.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

#include "executor/communicator.h"
#include "executor/npy.h"
#include "executor/program_runner.h"
#include "program_ir/program_io.h"
#include "tools/command.h"

namespace ctp::cli {
namespace {

struct RunArgs {
  std::string startup, main;
  int64_t steps = 1;
  int64_t batch = 1;
  std::vector<std::string> feeds;
  std::vector<std::string> fetch;
  uint64_t seed = 0;
  bool seed_by_rank = false;
  std::string device = "cpu";
  int rank = 0;
  int world_size = 1;
};

std::string value_text(const Tensor& t) {
  if (t.numel() == 1) {
    const std::string full = describe_tensor(t, 1);
    return full.substr(full.rfind('[') + 1, full.size() - full.rfind('[') - 2);
  }
  return describe_tensor(t, 8);
}

void run(const RunArgs& a) {
  if (a.steps < 0) throw UsageError("--steps must be 0 or more");
  if (a.batch < 1) throw UsageError("--batch must be 1 or more");
  if (a.world_size < 1 || a.rank < 0 || a.rank >= a.world_size)
    throw UsageError("--rank " + std::to_string(a.rank) + " is not in [0, --world-size " +
                     std::to_string(a.world_size) + ")");

  const Program startup = load_program_file(a.startup);
  const Program main = load_program_file(a.main);
  CommunicatorManager comms;
  ProgramRunOptions options;
  options.batch = a.batch;
  options.rank = a.rank;
  // Ranks initialise identically unless asked otherwise (the startup
  // broadcast then has nothing to fix).
  options.seed = a.seed_by_rank ? a.seed + static_cast<uint64_t>(a.rank) : a.seed;
  options.device = a.device == "gpu" ? Device{DeviceKind::CUDA, 0} : Device{};
  options.comms = &comms;
  options.fetch = a.fetch;
  for (const std::string& spec : a.feeds) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw UsageError("--feed expects NAME=FILE.npy, got '" + spec + "'");
    options.feeds[spec.substr(0, eq)] = read_npy_file(spec.substr(eq + 1));
  }

  ProgramRunner runner(startup, main, options);
  const auto start = std::chrono::steady_clock::now();
  runner.run_startup();
  if (!runner.synthetic_inputs().empty()) {
    std::cout << "synthetic inputs (batch " << a.batch << "):";
    for (const std::string& name : runner.synthetic_inputs()) std::cout << " " << name;
    std::cout << "\n";
  }
  for (int64_t step = 1; step <= a.steps; ++step) {
    const Fetched fetched = runner.run_step();
    std::cout << "step " << step << "/" << a.steps;
    for (const auto& [name, tensor] : fetched) std::cout << "  " << name << " = " << value_text(tensor);
    std::cout << std::endl;  // flushed: a launcher prefixes and forwards lines as they come
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char timing[64];
  std::snprintf(timing, sizeof timing, "%.3f s", seconds);
  std::cout << "ran startup (" << startup.global_block().op_count() << " ops) and " << a.steps
            << " step(s) of main (" << main.global_block().op_count() << " ops) in " << timing
            << std::endl;
}

const CommandRegistrar registrar([](CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run a startup program once and a main program for K steps, printing fetched values");
  cmd->add_option("--startup", args->startup, "Startup program (protobuf or JSON)")
      ->required()->check(CLI::ExistingFile);
  cmd->add_option("--main", args->main, "Main program (protobuf or JSON)")
      ->required()->check(CLI::ExistingFile);
  cmd->add_option("--steps", args->steps, "Steps of the main program")->capture_default_str();
  cmd->add_option("--batch", args->batch, "Batch size: replaces -1 dims of synthetic inputs")
      ->capture_default_str();
  cmd->add_option("--feed", args->feeds,
                  "NAME=FILE.npy: bind input NAME to that array at every step (repeatable)");
  cmd->add_option("--fetch", args->fetch,
                  "Vars to print after every step (default: the fetch ops' vars, else the loss)")
      ->delimiter(',');
  cmd->add_option("--seed", args->seed, "Seed of random initializers and synthetic data")
      ->capture_default_str();
  cmd->add_flag("--seed-by-rank", args->seed_by_rank,
                "Add the rank to the seed, so that workers initialise differently");
  cmd->add_option("--device", args->device, "cpu or gpu")
      ->check(CLI::IsMember({"cpu", "gpu"}))->capture_default_str();
  cmd->add_option("--rank", args->rank, "This worker's rank (varies its synthetic data)")
      ->capture_default_str();
  cmd->add_option("--world-size", args->world_size, "Number of workers")->capture_default_str();
  cmd->callback([args] { run(*args); });
});

}  // namespace
}  // namespace ctp::cli
