// `ctp transpile`: rewrites a startup and a main program for data-parallel
// training in one of the reference's four modes (docs/transpilers.md).
//
// Paddle read three settings from the environment; the library takes them as
// options and this command maps them: PADDLE_FUSE_ALLREDUCE -> --fuse-allreduce,
// PADDLE_LOSS_SCALE -> --loss-scale, FLAGS_selected_gpus -> --selected-gpus
// (only its count matters). A flag wins over its variable.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "program_ir/atomic_file.h"
#include "program_ir/error.h"
#include "program_ir/program_io.h"
#include "program_ir/text_io.h"
#include "tools/command.h"
#include "transpilers/rank_specialization.h"
#include "transpilers/transpile.h"

namespace ctp::cli {
namespace {

namespace fs = std::filesystem;

struct TranspileArgs {
  std::string mode;
  std::optional<std::string> trans_mode;
  std::optional<int> nrings;
  std::optional<int> rank;
  std::vector<std::string> endpoints;
  std::optional<std::string> current_endpoint;
  bool wait_port = false;
  std::optional<int> fuse_allreduce;
  std::optional<int> loss_scale;
  std::optional<double> bucket_mb;
  std::vector<std::string> selected_gpus;
  std::string startup;
  std::string main;
  std::string out_dir;
  std::string emit = "proto";
  bool all_ranks = false;
};

// Python's int(): optional surrounding whitespace and sign, decimal digits.
int env_int(const char* name, const std::string& value) {
  std::size_t begin = value.find_first_not_of(" \t\n\r\f\v");
  std::size_t end = value.find_last_not_of(" \t\n\r\f\v");
  const std::string s = begin == std::string::npos ? "" : value.substr(begin, end - begin + 1);
  std::size_t digits = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  bool ok = s.size() > digits &&
            std::all_of(s.begin() + static_cast<std::ptrdiff_t>(digits), s.end(),
                        [](char c) { return c >= '0' && c <= '9'; });
  if (ok) {
    try {
      return std::stoi(s);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  throw Error(std::string("environment variable ") + name + "='" + value +
              "' is not an integer");
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return std::nullopt;
  return std::string(v);
}

// FLAGS_selected_gpus as the reference counts it: the fields between commas.
int gpu_count(const std::string& list) {
  return static_cast<int>(std::count(list.begin(), list.end(), ',')) + 1;
}

TranspileOptions build_options(const TranspileArgs& a, TranspileMode mode) {
  const bool spmt = mode == TranspileMode::kSingleProcessMultiThread;
  const bool multi_thread = mode == TranspileMode::kMultiThread;
  if (a.trans_mode && !multi_thread)
    throw UsageError("--trans-mode applies to --mode multi_thread only");
  if ((a.fuse_allreduce || a.loss_scale) && !spmt)
    throw UsageError("--fuse-allreduce and --loss-scale apply to --mode "
                     "single_process_multi_thread only");
  if (a.bucket_mb && mode != TranspileMode::kGradAllReduce)
    throw UsageError("--bucket-mb applies to --mode grad_allreduce only");
  if (a.bucket_mb && !(*a.bucket_mb > 0))
    throw UsageError("--bucket-mb must be positive");
  if (!a.selected_gpus.empty() && !spmt && !multi_thread)
    throw UsageError("--selected-gpus applies to single_process_multi_thread and multi_thread");
  if (spmt && a.nrings && *a.nrings != 1)
    throw UsageError("single_process_multi_thread always uses one ring; drop --nrings");
  if (a.all_ranks && (a.rank || a.current_endpoint))
    throw UsageError("--all-ranks writes every rank: drop --rank and --current-endpoint");
  if (!a.all_ranks && !a.rank) throw UsageError("--rank is required (or give --all-ranks)");

  TranspileOptions o;
  CollectiveOptions& c = o.collective;
  c.nrings = a.nrings;
  c.endpoints = a.endpoints;
  c.rank = a.all_ranks ? 0 : *a.rank;
  c.wait_port = a.wait_port;
  if (a.current_endpoint) {
    c.current_endpoint = *a.current_endpoint;
  } else if (c.rank >= 0 && c.rank < static_cast<int>(c.endpoints.size())) {
    c.current_endpoint = c.endpoints[c.rank];
  } else if (c.rank >= 0) {
    throw UsageError("--rank " + std::to_string(c.rank) + " has no entry in --endpoints (" +
                     std::to_string(c.endpoints.size()) + " given); pass --current-endpoint");
  }  // a negative rank is reported by the transpiler, as the reference does

  if (a.bucket_mb)
    o.grad_allreduce.bucket_bytes = bucket_bytes_for_mib(*a.bucket_mb);
  if (a.trans_mode) o.multi_thread.trans_mode = parse_multi_thread_trans_mode(*a.trans_mode);
  auto& s = o.single_process_multi_thread;
  if (spmt) {
    if (auto v = env("PADDLE_FUSE_ALLREDUCE")) s.fuse_allreduce = env_int("PADDLE_FUSE_ALLREDUCE", *v);
    if (auto v = env("PADDLE_LOSS_SCALE")) s.loss_scale = env_int("PADDLE_LOSS_SCALE", *v);
  }
  if (a.fuse_allreduce) s.fuse_allreduce = *a.fuse_allreduce;
  if (a.loss_scale) s.loss_scale = *a.loss_scale;
  std::optional<int> gpus;
  if (auto v = env("FLAGS_selected_gpus")) gpus = gpu_count(*v);
  if (!a.selected_gpus.empty()) gpus = static_cast<int>(a.selected_gpus.size());
  if (gpus) {
    s.gpu_nums = *gpus;
    o.multi_thread.gpu_num = *gpus;
  }
  return o;
}

struct Emit {
  std::string extension;
  std::optional<ProgramFormat> format;  // nullopt: the text form
};

Emit parse_emit(const std::string& emit) {
  if (emit == "proto") return {"pb", ProgramFormat::Proto};
  if (emit == "json") return {"json", ProgramFormat::Json};
  if (emit == "text") return {"txt", std::nullopt};
  throw UsageError("--emit must be proto, json or text, not '" + emit + "'");
}

std::string render(const Program& program, const Emit& emit) {
  return emit.format ? serialize_program(program, *emit.format) : program_to_text(program);
}

void make_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create directory '" + dir.string() + "': " + ec.message());
}

void write_pair(const fs::path& dir, const Emit& emit, const std::string& startup,
                const std::string& main) {
  make_dir(dir);
  write_file_atomically((dir / ("startup." + emit.extension)).string(), startup);
  write_file_atomically((dir / ("main." + emit.extension)).string(), main);
}

// Transpiles once (rank 0), then writes every rank's pair from the shared
// work: the main program is the same for all ranks and is rendered once; each
// rank's startup differs only in a few attributes of the communicator ops.
void write_all_ranks(TranspileMode mode, const TranspileOptions& options, Program startup,
                     Program main, const fs::path& out_dir, const Emit& emit) {
  const std::size_t original_ops = startup.global_block().op_count();
  transpile(mode, options, startup, main);
  const std::string main_bytes = render(main, emit);
  const StartupRankSpecializer specializer(std::move(startup), original_ops,
                                           options.collective.endpoints);
  const int nranks = static_cast<int>(options.collective.endpoints.size());
  make_dir(out_dir);
  const unsigned threads =
      std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(),
                                      static_cast<unsigned>(nranks)));
  std::atomic<int> next{0};
  std::vector<std::exception_ptr> errors(threads);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      try {
        for (int r = next++; r < nranks; r = next++) {
          const std::string startup_bytes = render(specializer.for_rank(r), emit);
          write_pair(out_dir / ("rank_" + std::to_string(r)), emit, startup_bytes, main_bytes);
        }
      } catch (...) {
        errors[t] = std::current_exception();
        next = nranks;  // the others stop at their next rank
      }
    });
  }
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

void run_transpile(const TranspileArgs& a) {
  const TranspileMode mode = [&] {
    try {
      return parse_transpile_mode(a.mode);
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  }();
  const Emit emit = parse_emit(a.emit);
  const TranspileOptions options = build_options(a, mode);
  Program startup = load_program_file(a.startup);
  Program main = load_program_file(a.main);
  if (a.all_ranks) {
    write_all_ranks(mode, options, std::move(startup), std::move(main), a.out_dir, emit);
    return;
  }
  transpile(mode, options, startup, main);
  write_pair(a.out_dir, emit, render(startup, emit), render(main, emit));
}

const CommandRegistrar kRegistrar([](CLI::App& app) {
  auto args = std::make_shared<TranspileArgs>();
  CLI::App* cmd = app.add_subcommand(
      "transpile",
      "Rewrite a startup and a main program for data-parallel training as Paddle's collective "
      "transpiler does; writes OUTDIR/startup.<ext> and OUTDIR/main.<ext> (pb, json or txt), or "
      "OUTDIR/rank_<r>/... for every rank with --all-ranks. PADDLE_FUSE_ALLREDUCE, "
      "PADDLE_LOSS_SCALE and FLAGS_selected_gpus are read when set; flags win.");
  cmd->add_option("--mode", args->mode,
                  "grad_allreduce, local_sgd, single_process_multi_thread or multi_thread")
      ->required();
  cmd->add_option("--trans-mode", args->trans_mode,
                  "multi_thread only: fuse_all_reduce (default), all_gather or all_reduce");
  cmd->add_option("--nrings", args->nrings,
                  "rings to alternate over (default 2; multi_thread 1; "
                  "single_process_multi_thread always 1)");
  cmd->add_option("--rank", args->rank, "this process's rank");
  cmd->add_option("--endpoints", args->endpoints, "every rank's host:port, comma-separated")
      ->delimiter(',')
      ->required();
  cmd->add_option("--current-endpoint", args->current_endpoint,
                  "this rank's host:port (default: endpoints[rank])");
  cmd->add_flag("--wait-port", args->wait_port,
                "accepted for compatibility; ctp never blocks here (the executor's rendezvous "
                "waits for the other ranks)");
  cmd->add_option("--fuse-allreduce", args->fuse_allreduce,
                  "single_process_multi_thread: 0 allreduce per grad, 1 coalesce (default), "
                  "2 c_allreduce_xsum [PADDLE_FUSE_ALLREDUCE]")
      ->check(CLI::IsMember({0, 1, 2}));
  cmd->add_option("--loss-scale", args->loss_scale,
                  "single_process_multi_thread: 0 leaves the loss gradient unscaled, 1 scales "
                  "it (default) [PADDLE_LOSS_SCALE]")
      ->check(CLI::IsMember({0, 1}));
  cmd->add_option("--bucket-mb", args->bucket_mb,
                  "grad_allreduce only, ctp's schedule (not the reference's): coalesce the "
                  "gradients into buckets of about this many MiB in the order the backward "
                  "makes them, one c_allreduce_sum per bucket right after its last gradient");
  cmd->add_option("--selected-gpus", args->selected_gpus,
                  "GPU ids per process, comma-separated; only their count is used "
                  "[FLAGS_selected_gpus]")
      ->delimiter(',');
  cmd->add_option("--startup", args->startup, "startup program (protobuf or JSON)")->required();
  cmd->add_option("--main", args->main, "main program (protobuf or JSON)")->required();
  cmd->add_option("-o,--out", args->out_dir, "output directory (created if missing)")
      ->required();
  cmd->add_option("--emit", args->emit, "output format: proto (default), json or text");
  cmd->add_flag("--all-ranks", args->all_ranks,
                "write OUTDIR/rank_<r>/ for every rank from one transpile (ranks in parallel)");
  cmd->callback([args] { run_transpile(*args); });
});

}  // namespace
}  // namespace ctp::cli
