// `ctp run`: runs a startup program once and a main program for K steps on
// synthetic or .npy-fed inputs, printing the fetched values of every step.
// Under `ctp launch` (or mpirun, Slurm, torchrun) each worker runs it, taking
// its rank from the launcher's variables; the collective ops in the programs
// find their peers through the communicator manager it creates. `{rank}` in a
// program or --feed path picks each rank's file (ctp transpile --all-ranks writes
// OUT/rank_<r>/...). With --threads G one process drives G device threads
// (the single-process modes).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <functional>
#include <filesystem>
#include <map>
#include <memory>

#include "executor/cuda/device_context.h"
#include "executor/runtime/communicator.h"
#include "executor/runtime/device_runtime.h"
#include "executor/runtime/memory_stats.h"
#include "executor/runtime/npy.h"
#include "executor/op_profile.h"
#include "executor/program_runner.h"
#include "executor/thread_group_driver.h"
#include "executor/worker_env.h"
#include "ops/common/paddle_tensor_file.h"
#include "program_ir/atomic_file.h"
#include "program_ir/persistables.h"
#include "program_ir/program_io.h"
#include "tools/command.h"

extern char** environ;

namespace ctp::cli {
namespace {

struct RunArgs {
  std::string startup, main;
  bool random_params = false;                     // --random-params
  std::string params_dir, params_file;            // --load-params(-file)
  std::string save_params_dir, save_params_file;  // --save-params(-file)
  int64_t steps = 1;
  int64_t batch = 1;
  std::vector<std::string> feeds;
  std::vector<std::string> input_shapes;
  std::vector<std::string> fetch;
  uint64_t seed = 0;
  bool seed_by_rank = false;
  std::string device = "cpu";
  std::optional<int> rank, world_size;
  std::optional<double> timeout_s;
  int threads = 1;
  bool profile = false;
  bool batch_ops = true;
  bool check_nan_inf = false;
  bool conv_tf32 = false;
  bool keep_all_vars = false;
  std::string save_fetched;
};

std::string with_rank(std::string path, int rank) {
  for (std::size_t at; (at = path.find("{rank}")) != std::string::npos;)
    path.replace(at, 6, std::to_string(rank));
  return path;
}

// The last step's fetched values as DIR/<var>.npy, all written or none. A
// '/' in a var's name (Paddle's "save_infer_model/scale_0") makes a
// subdirectory, as Paddle's own save_vars does; a name that would leave DIR
// is refused.
void save_fetched(const std::string& dir_arg, const Fetched& fetched) {
  std::filesystem::path path = std::filesystem::path(dir_arg).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();  // "out/" -> "out"
  const std::string dir = path.string();
  const std::string parent = path.parent_path().string();
  OutputSet out(parent.empty() ? "." : parent);
  out.make_directories(dir);
  for (const auto& [name, tensor] : fetched) {
    std::filesystem::path file = dir;
    for (const auto& part : std::filesystem::path(name)) {
      const std::string text = part.string();
      if (text.empty() || text == "/" || text == "." || text == "..")
        throw Error("--save-fetched: var '" + name + "' cannot be a file name in " + dir);
      file /= part;
    }
    if (file == path)
      throw Error("--save-fetched: var '" + name + "' cannot be a file name in " + dir);
    if (file.parent_path() != path) out.make_directories(file.parent_path().string());
    out.stage(file.string() + ".npy", tensor_to_npy(tensor));
  }
  out.commit();
}

// After the run: every persistable tensor of `main` as worker 0 of this
// process holds it, in Paddle's files (what --load-params / --load-params-file
// read back, and Paddle's load_persistables too), all written or none. With
// {rank} in the path every rank writes its own; without it rank 0 alone
// writes (the synchronous modes leave every rank the same parameters).
void save_params(const RunArgs& a, int rank, const Program& main, ProgramRunner& first,
                 DeviceRuntime& runtime, CommunicatorManager* comms) {
  const bool to_dir = !a.save_params_dir.empty();
  const std::string& spec = to_dir ? a.save_params_dir : a.save_params_file;
  if (spec.empty() || (rank != 0 && spec.find("{rank}") == std::string::npos)) return;
  const std::filesystem::path path =
      std::filesystem::path(with_rank(spec, rank)).lexically_normal();
  OutputSet out(existing_ancestor((to_dir ? path : path.parent_path()).string()));
  std::string combined;
  for (const std::string& name : persistable_tensor_names(main)) {
    const Tensor* value = first.scope().find(name);
    if (!value || !value->initialized())
      throw Error("--save-params: persistable var '" + name + "' holds no value after the run");
    const Tensor host = runtime.to_host(*value, comms);
    if (!to_dir) {
      paddle_file::append_tensor(combined, host);
      continue;
    }
    std::string bytes;
    paddle_file::append_tensor(bytes, host);
    const std::filesystem::path file = path / name;  // a '/' in a name: a subdirectory, as Paddle's
    out.make_directories(file.parent_path().string());
    out.stage(file.string(), bytes);
  }
  if (!to_dir) {
    if (!path.parent_path().empty()) out.make_directories(path.parent_path().string());
    out.stage(path.string(), combined);
  }
  out.commit();
}

// "NAME=1,3,48,320" as (NAME, its dims).
std::pair<std::string, std::vector<int64_t>> parse_input_shape(const std::string& spec) {
  const auto bad = [&](const std::string& why) {
    return UsageError("--input-shape expects NAME=D0,D1,... (e.g. x=1,3,48,320), got '" + spec +
                      "': " + why);
  };
  const auto eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0) throw bad("no NAME=");
  std::vector<int64_t> dims;
  std::size_t at = eq + 1;
  while (true) {
    const std::size_t comma = std::min(spec.find(',', at), spec.size());
    const std::string text = spec.substr(at, comma - at);
    std::size_t used = 0;
    int64_t dim = -1;
    try {
      dim = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (text.empty() || used != text.size() || dim < 1)
      throw bad("dim '" + text + "' is not a whole number of 1 or more");
    dims.push_back(dim);
    if (comma == spec.size()) break;
    at = comma + 1;
  }
  return {spec.substr(0, eq), dims};
}

std::string value_text(const Tensor& t) {
  if (t.numel() == 1) {
    const std::string full = describe_tensor(t, 1);
    return full.substr(full.rfind('[') + 1, full.size() - full.rfind('[') - 2);
  }
  return describe_tensor(t, 8);
}

// The startup program, then (with --load-params / --load-params-file) a load
// of every persistable tensor of `main` from Paddle's saved files, which so
// wins over whatever the startup program gave them; or, with
// --random-params, a program that gives them random values.
Program startup_with_params(const RunArgs& a, const Program& main, int rank) {
  if (a.random_params) return random_persistables_program(main);
  Program startup = a.startup.empty() ? Program::with_global_block()
                                      : load_program_file(with_rank(a.startup, rank));
  if (a.params_dir.empty() && a.params_file.empty()) return startup;
  LoadPersistablesOptions load;
  load.dir = with_rank(a.params_dir, rank);
  if (!a.params_file.empty()) load.combined_file = with_rank(a.params_file, rank);
  const Program loads = load_persistables_program(main, load);
  Block& block = startup.global_block();
  for (const Var& v : loads.global_block().vars()) block.get_or_add_var(v);
  for (const Op& op : loads.global_block().ops()) block.append_op(op);
  return startup;
}

// The most bytes tensors held at once in this process (startup included),
// as torch.cuda.max_memory_allocated: tensors' bytes, not the driver's.
void print_peak_memory(DeviceKind device) {
  for (DeviceKind kind : {device, DeviceKind::CPU}) {
    const MemoryStats stats = memory_stats(kind);
    char line[128];
    std::snprintf(line, sizeof line, "peak tensor memory on %s: %.1f MiB (%lld buffers made)\n",
                  std::string(to_string(kind)).c_str(),
                  static_cast<double>(stats.peak_bytes) / (1 << 20),
                  static_cast<long long>(stats.buffers_made));
    std::cout << line;
    if (kind == DeviceKind::CPU) break;
  }
}

// The arguments' own consistency, before anything is read; the shapes of
// --input-shape by input name.
std::map<std::string, std::vector<int64_t>> checked_input_shapes(const RunArgs& a) {
  if (a.startup.empty() && a.params_dir.empty() && a.params_file.empty() && !a.random_params)
    throw UsageError("--startup, --load-params, --load-params-file or --random-params is "
                     "required (what gives the parameters their values)");
  if (a.random_params && !(a.startup.empty() && a.params_dir.empty() && a.params_file.empty()))
    throw UsageError("--random-params gives every parameter its values: it excludes --startup, "
                     "--load-params and --load-params-file");
  if (!a.save_params_dir.empty() && !a.save_params_file.empty())
    throw UsageError("--save-params and --save-params-file exclude each other");
  if (!a.params_dir.empty() && !a.params_file.empty())
    throw UsageError("--load-params and --load-params-file exclude each other (a directory of "
                     "per-var files, or one combined file)");
  if (a.steps < 0) throw UsageError("--steps must be 0 or more");
  if (a.batch < 1) throw UsageError("--batch must be 1 or more");
  if (a.threads < 1) throw UsageError("--threads must be 1 or more");
  if (a.conv_tf32 && a.device != "gpu") throw UsageError("--conv-tf32 needs --device gpu");
  if (!a.save_fetched.empty() && a.steps < 1) throw UsageError("--save-fetched needs --steps 1 or more");
  std::map<std::string, std::vector<int64_t>> input_shapes;
  for (const std::string& spec : a.input_shapes) {
    auto [name, dims] = parse_input_shape(spec);
    if (!input_shapes.emplace(name, std::move(dims)).second)
      throw UsageError("--input-shape gives input '" + name + "' twice");
  }
  return input_shapes;
}

// This process's place in the job: --rank / --world-size / --timeout over the
// launcher's variables.
CommOptions comm_options(const RunArgs& a, const WorkerIdentity& id) {
  CommOptions comm;
  comm.job_id = id.job_id;
  comm.rank = a.rank.value_or(id.rank);
  comm.world_size = a.world_size.value_or(id.world_size);
  if (comm.world_size < 1 || comm.rank < 0 || comm.rank >= comm.world_size)
    throw UsageError("rank " + std::to_string(comm.rank) + " is not in [0, world size " +
                     std::to_string(comm.world_size) + ")");
  if (a.timeout_s) {
    try {
      comm.timeout = timeout_from_seconds(*a.timeout_s, "--timeout");
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  } else if (id.comm_timeout) {
    comm.timeout = *id.comm_timeout;
  }
  return comm;
}

// What every worker of this process shares; each gets its own rank, seed,
// runtime and communicators in Workers::Workers.
ProgramRunOptions shared_run_options(const RunArgs& a, const Environment& env,
                                     const WorkerIdentity& id, int rank,
                                     std::map<std::string, std::vector<int64_t>> input_shapes) {
  ProgramRunOptions options;
  options.batch = a.batch;
  options.input_shapes = std::move(input_shapes);
  options.fetch = a.fetch;
  options.batch_ops = a.batch_ops;
  options.keep_all_vars = a.keep_all_vars;
  options.check_finite =
      a.check_nan_inf || boolean_variable(env, "FLAGS_check_nan_inf").value_or(false);
  const int gpu = id.selected_gpus.empty() ? id.local_rank : id.selected_gpus.front();
  options.device = a.device == "gpu" ? Device{DeviceKind::CUDA, gpu} : Device{};
  for (const std::string& spec : a.feeds) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw UsageError("--feed expects NAME=FILE.npy, got '" + spec + "'");
    options.feeds[spec.substr(0, eq)] = read_npy_file(with_rank(spec.substr(eq + 1), rank));
  }
  return options;
}

// This process's workers: one runner per device thread; worker
// w = rank * threads + thread. Members are destroyed in reverse order, so the
// rings made on the devices' runtimes go before the runtimes.
class Workers {
 public:
  Workers(const RunArgs& a, const CommOptions& comm, const ProgramRunOptions& options,
          const Program& startup, const Program& main) {
    const bool gpu_run = options.device.kind == DeviceKind::CUDA;
    for (int i = 0; i < a.threads; ++i)  // CUDA: one GPU per thread, from the process's first
      runtimes_.push_back(std::make_unique<DeviceRuntime>(
          Device{options.device.kind, options.device.index + (gpu_run ? i : 0)}));
    if (a.conv_tf32)
      for (const auto& runtime : runtimes_) runtime->context()->set_conv_tf32(true);
    if (a.threads == 1) {
      single_ = std::make_unique<CommunicatorManager>(comm);
    } else {
      std::vector<Device> devices;
      for (const auto& runtime : runtimes_) devices.push_back(runtime->device());
      threads_ = std::make_unique<DeviceThreads>(a.threads, comm, RunServices{}, devices);
    }
    // Thread 0's main program, when asked: the other threads run the same ops.
    if (a.profile) profile_ = std::make_unique<OpProfile>(runtimes_[0]->make_op_timer());
    for (int i = 0; i < a.threads; ++i) {
      ProgramRunOptions o = options;
      o.rank = comm.rank * a.threads + i;
      // Workers initialise identically unless asked otherwise (a startup
      // broadcast then has nothing to fix).
      o.seed = a.seed_by_rank ? a.seed + static_cast<uint64_t>(o.rank) : a.seed;
      o.runtime = runtimes_[static_cast<std::size_t>(i)].get();
      o.device = o.runtime->device();
      if (i == 0) o.profile = profile_.get();
      o.comms = threads_ ? &threads_->comms(i) : single_.get();
      runners_.push_back(std::make_unique<ProgramRunner>(startup, main, std::move(o)));
    }
  }

  std::size_t size() const { return runners_.size(); }
  ProgramRunner& first() { return *runners_[0]; }
  DeviceRuntime& first_runtime() { return *runtimes_[0]; }
  CommunicatorManager* first_comms() { return threads_ ? &threads_->comms(0) : single_.get(); }
  OpProfile* profile() { return profile_.get(); }

  // body(i, runner i) on every worker at once (one thread each with --threads).
  void each(const std::function<void(std::size_t, ProgramRunner&)>& body) {
    if (!threads_) return body(0, *runners_[0]);
    threads_->run([&](int i, RunServices&) {
      body(static_cast<std::size_t>(i), *runners_[static_cast<std::size_t>(i)]);
    });
  }

 private:
  std::vector<std::unique_ptr<DeviceRuntime>> runtimes_;
  std::unique_ptr<CommunicatorManager> single_;
  std::unique_ptr<DeviceThreads> threads_;
  std::unique_ptr<OpProfile> profile_;
  std::vector<std::unique_ptr<ProgramRunner>> runners_;
};

void print_synthetic_inputs(const RunArgs& a, ProgramRunner& first,
                            const std::map<std::string, std::vector<int64_t>>& input_shapes) {
  if (first.synthetic_inputs().empty()) return;
  std::cout << "synthetic inputs (batch " << a.batch << "):";
  for (const std::string& name : first.synthetic_inputs()) {
    std::cout << " " << name;
    if (const auto given = input_shapes.find(name); given != input_shapes.end())
      for (std::size_t i = 0; i < given->second.size(); ++i)
        std::cout << (i ? "," : "=") << given->second[i];
  }
  std::cout << "\n";
}

// The main program's steps, printing worker 0's fetched values after each;
// returns the last step's values.
Fetched run_steps(const RunArgs& a, Workers& workers) {
  std::vector<Fetched> fetched(workers.size());
  for (int64_t step = 1; step <= a.steps; ++step) {
    workers.each([&](std::size_t i, ProgramRunner& r) { fetched[i] = r.run_step(); });
    std::cout << "step " << step << "/" << a.steps;
    for (const auto& [name, tensor] : fetched[0]) std::cout << "  " << name << " = " << value_text(tensor);
    std::cout << "\n";
    // Flushed: a launcher prefixes and forwards lines as they come. A run
    // whose output is lost stops here, not after the last step.
    check_written(std::cout, "standard output");
  }
  return std::move(fetched[0]);
}

void run(const RunArgs& a) {
  auto input_shapes = checked_input_shapes(a);
  const Environment env = environment_from(environ);
  const WorkerIdentity id = worker_identity(env);
  const CommOptions comm = comm_options(a, id);
  const int rank = comm.rank;
  const Program main = load_program_file(with_rank(a.main, rank));
  const Program startup = startup_with_params(a, main, rank);
  const ProgramRunOptions options = shared_run_options(a, env, id, rank, std::move(input_shapes));
  Workers workers(a, comm, options, startup, main);

  const auto start = std::chrono::steady_clock::now();
  workers.each([](std::size_t, ProgramRunner& r) { r.run_startup(); });
  print_synthetic_inputs(a, workers.first(), options.input_shapes);
  const Fetched fetched = run_steps(a, workers);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char timing[64];
  std::snprintf(timing, sizeof timing, "%.3f s", seconds);
  std::cout << "ran startup (" << startup.global_block().op_count() << " ops) and " << a.steps
            << " step(s) of main (" << main.global_block().op_count() << " ops)";
  if (a.threads > 1) std::cout << " on " << a.threads << " device threads (printed: thread 0)";
  std::cout << " in " << timing << std::endl;
  if (workers.profile()) {
    workers.profile()->print(std::cout);
    print_peak_memory(options.device.kind);
  }
  check_written(std::cout, "standard output");
  if (!a.save_fetched.empty()) save_fetched(a.save_fetched, fetched);
  save_params(a, rank, main, workers.first(), workers.first_runtime(), workers.first_comms());
}

const CommandRegistrar registrar([](CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run a startup program once and a main program for K steps, printing fetched values");
  cmd->add_option("--startup", args->startup,
                  "Startup program (protobuf or JSON); may be left out with --load-params, "
                  "--load-params-file or --random-params");
  cmd->add_option("--load-params", args->params_dir,
                  "Load every persistable tensor of the main program from DIR/<var name>, "
                  "Paddle's per-var files (save_persistables, save_inference_model without "
                  "params_filename), after the startup program");
  cmd->add_option("--save-params", args->save_params_dir,
                  "After the run, write every persistable tensor of the main program as "
                  "DIR/<var name> in Paddle's format (what --load-params reads); rank 0 only "
                  "unless the path holds {rank}");
  cmd->add_option("--save-params-file", args->save_params_file,
                  "After the run, write every persistable tensor of the main program into one "
                  "combined file, in the order of their names (what --load-params-file reads); "
                  "rank 0 only unless the path holds {rank}");
  cmd->add_option("--load-params-file", args->params_file,
                  "Load every persistable tensor of the main program from one combined file, "
                  "in the order of the vars' names (Paddle's __params__ / .pdiparams: "
                  "save_inference_model with params_filename), after the startup program");
  cmd->add_flag("--random-params", args->random_params,
                "Give every parameter the main program reads uniform values in [-0.1, 0.1) "
                "(batch_norm's variances 1), the same on every run and device, instead of a "
                "startup program or saved files: to time or try a model without its weights");
  cmd->add_option("--main", args->main, "Main program (protobuf or JSON)")
      ->required();
  cmd->add_option("--steps", args->steps, "Steps of the main program")->capture_default_str();
  cmd->add_option("--batch", args->batch, "Batch size: replaces -1 dims of synthetic inputs")
      ->capture_default_str();
  cmd->add_option("--feed", args->feeds,
                  "NAME=FILE.npy: bind input NAME to that array at every step (repeatable); "
                  "{rank} in FILE picks each rank's array");
  cmd->add_option("--input-shape", args->input_shapes,
                  "NAME=D0,D1,...: the shape of synthetic input NAME, for inputs with unknown dims "
                  "beside the batch (e.g. x=1,3,48,320 for an image of any width); every dim "
                  "given, the declared rank and fixed dims kept, --batch not applied (repeatable)");
  cmd->add_option("--fetch", args->fetch,
                  "Vars to print after every step (default: the fetch ops' vars, else the loss)")
      ->delimiter(',');
  cmd->add_option("--seed", args->seed, "Seed of random initializers and synthetic data")
      ->capture_default_str();
  cmd->add_flag("--seed-by-rank", args->seed_by_rank,
                "Add the rank to the seed, so that workers initialise differently");
  cmd->add_option("--device", args->device, "cpu or gpu")
      ->check(CLI::IsMember({"cpu", "gpu"}))->capture_default_str();
  cmd->add_option("--rank", args->rank,
                  "This process's rank (default: from the launcher's variables); replaces {rank} "
                  "in --startup, --main and --feed files and varies the synthetic data");
  cmd->add_option("--world-size", args->world_size,
                  "Number of processes (default: from the launcher's variables)");
  cmd->add_option("--threads", args->threads,
                  "Device threads in this process (single-process multi-device programs)")
      ->capture_default_str();
  cmd->add_option("--timeout", args->timeout_s,
                  "Seconds to wait for a peer (default: CTP_COMM_TIMEOUT, else 300)");
  cmd->add_flag("--profile", args->profile,
                "Time every op of the main program (device time on a GPU) and print the most "
                "expensive after the run; the first step is not counted");
  cmd->add_flag("--check-nan-inf", args->check_nan_inf,
                "Check every op's outputs for NaN/Inf and stop at the first op that writes one "
                "(slow; also FLAGS_check_nan_inf=1). Without it a fetched value that is not "
                "finite still stops the run, naming the first op whose output holds one");
  cmd->add_flag_callback("--no-op-batching", [args] { args->batch_ops = false; },
                "Run every op alone, even where the device has one kernel call for a run of "
                "independent ops of one type (the same results; to compare the two)");
  cmd->add_flag("--conv-tf32", args->conv_tf32,
                "GPU: FP32 convolutions may use TF32 tensor cores (10-bit mantissa products, as "
                "PyTorch's cuDNN convolutions by default); off: true FP32, as the CPU computes");
  cmd->add_flag("--keep-all-vars", args->keep_all_vars,
                "Keep every intermediate var's tensor between steps (by default each is freed "
                "after the last op that reads it; fetched vars are always kept)");
  cmd->add_option("--save-fetched", args->save_fetched,
                  "Write the last step's fetched values (see --fetch) as DIR/<var>.npy");
  cmd->callback([args] { run(*args); });
});

}  // namespace
}  // namespace ctp::cli
