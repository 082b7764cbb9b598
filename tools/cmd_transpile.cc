// `ctp transpile`: rewrites a startup and a main program for data-parallel
// training in one of the reference's four modes (docs/transpilers.md).
//
// The modes, their flags, help and checks come from the transpiler registry
// (transpilers/transpiler_registry.h): a transpiler's settings become flags,
// and Paddle's environment variables for them (PADDLE_FUSE_ALLREDUCE ->
// --fuse-allreduce, PADDLE_LOSS_SCALE -> --loss-scale, FLAGS_selected_gpus ->
// --selected-gpus) are read here, never by the library. A flag wins over its
// variable.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <functional>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "program_ir/atomic_file.h"
#include "program_ir/error.h"
#include "program_ir/mapped_file.h"
#include "program_ir/program_io.h"
#include "program_ir/proto_io.h"
#include "program_ir/text_io.h"
#include "tools/command.h"
#include "tools/keep_until_exit.h"
#include "transpilers/collective_choices.h"
#include "transpilers/rank_specialization.h"
#include "transpilers/transpiler.h"
#include "transpilers/transpiler_registry.h"

namespace ctp::cli {
namespace {

namespace fs = std::filesystem;

// A transpiler's own setting as a flag: the text given, or the items of a
// comma-separated list.
struct SettingArg {
  std::string text;
  std::vector<std::string> items;
  CLI::Option* option = nullptr;
};

struct TranspileArgs {
  std::string mode;
  std::optional<int> nrings;
  std::optional<int> rank;
  std::vector<std::string> endpoints;
  std::optional<std::string> current_endpoint;
  bool wait_port = false;
  std::string params = "auto";
  std::string op_dialect = "legacy";
  std::map<std::string, SettingArg> settings;  // by setting name, one per registered flag
  std::string startup;
  std::string main;
  std::string out_dir;
  std::string emit = "proto";
  bool all_ranks = false;
};

// Python's int(): optional surrounding whitespace and sign, decimal digits.
int env_int(const std::string& name, const std::string& value) {
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
  throw Error("environment variable " + name + "='" + value + "' is not an integer");
}

// "a", "a and b", "a, b and c".
std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) text += i + 1 == names.size() ? " and " : ", ";
    text += names[i];
  }
  return text;
}

// The settings of `r`: Paddle's environment variable where set (read here
// only, never by the library), then the flag, which wins. A flag of another
// transpiler is a usage error.
TranspilerSettings collect_settings(const TranspileArgs& a, const TranspilerRegistration& r) {
  for (const auto& shared : builtin_transpilers().settings()) {
    const SettingArg& arg = a.settings.at(shared.setting.name);
    const auto& takers = shared.transpilers;
    if (arg.option->count() && std::find(takers.begin(), takers.end(), r.name) == takers.end())
      throw UsageError("--" + shared.setting.name + " applies to --mode " + joined(takers) +
                       " only");
  }
  TranspilerSettings settings;
  for (const TranspilerSetting& s : r.settings) {
    if (!s.env.empty()) {
      if (const char* v = std::getenv(s.env.c_str()))
        settings[s.name] = s.kind == SettingKind::kInt ? std::to_string(env_int(s.env, v)) : v;
    }
    const SettingArg& arg = a.settings.at(s.name);
    if (!arg.option->count()) continue;
    if (s.kind != SettingKind::kList) {
      settings[s.name] = arg.text;
      continue;
    }
    std::string list;
    for (const std::string& item : arg.items) list += (list.empty() ? "" : ",") + item;
    settings[s.name] = list;
  }
  return settings;
}

CollectiveOptions build_collective(const TranspileArgs& a) {
  if (a.all_ranks && (a.rank || a.current_endpoint))
    throw UsageError("--all-ranks writes every rank: drop --rank and --current-endpoint");
  if (!a.all_ranks && !a.rank) throw UsageError("--rank is required (or give --all-ranks)");
  const CollectiveChoices choices{.rank = a.all_ranks ? 0 : *a.rank, .endpoints = a.endpoints,
                                  .current_endpoint = a.current_endpoint, .nrings = a.nrings,
                                  .wait_port = a.wait_port, .params = a.params,
                                  .op_dialect = a.op_dialect};
  try {
    return collective_options(choices);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

// The transpiler the flags ask for; errors in what the flags chose (not in
// where the ranks are) are usage errors.
std::unique_ptr<Transpiler> build_transpiler(const TranspileArgs& a) {
  const TranspilerRegistry& registry = builtin_transpilers();
  const TranspilerRegistration* r = registry.find(a.mode);
  if (!r)
    throw UsageError("unknown --mode '" + a.mode + "' (expected " + registry.names_text() + ")");
  const TranspilerSettings settings = collect_settings(a, *r);
  const CollectiveOptions collective = build_collective(a);
  try {
    std::unique_ptr<Transpiler> transpiler = r->create(collective, settings);
    transpiler->check_options();
    return transpiler;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
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

// Staged only: run_transpile commits every file of the output at once.
// Protobuf goes to the staged file as it is encoded (the output is never
// whole in memory); JSON and text are rendered first.
// `input`, when given, is the mapped file the program was read from: the
// writer gives its pages back behind it (write_program_proto).
void stage_program(OutputSet& output, const fs::path& path, const Program& program,
                   const Emit& emit, const MappedFile* input = nullptr) {
  if (emit.format == ProgramFormat::Proto) {
    output.stage_streamed(path.string(),
                          [&](ByteSink& sink) { write_program_proto(program, sink, input); });
    return;
  }
  output.stage(path.string(), render(program, emit));
}

fs::path program_path(const fs::path& dir, const char* name, const Emit& emit) {
  return dir / (std::string(name) + "." + emit.extension);
}

// Says on stderr which vars the transpile took as parameters, and how.
void report(const Transpiler& transpiler, const TranspileReport& report) {
  if (report.parameters)
    std::cerr << "ctp transpile: " << transpiler.name() << ": "
              << describe(*report.parameters, transpiler.collective().params) << "\n";
}

// Gives the heap's free pages back to the system.
void return_freed_memory() {
#ifdef __GLIBC__
  ::malloc_trim(0);
#endif
}

// Work on a thread of its own, its error kept for join(). The destructor
// waits too, so that a task declared after what it uses (the OutputSet it
// stages into) is done before that goes.
class BackgroundTask {
 public:
  BackgroundTask() = default;
  BackgroundTask(const BackgroundTask&) = delete;
  BackgroundTask& operator=(const BackgroundTask&) = delete;
  ~BackgroundTask() { join(); }

  void start(std::function<void()> work) {
    thread_ = std::thread([this, work = std::move(work)] {
      try {
        work();
      } catch (...) {
        error_ = std::current_exception();
      }
    });
  }
  std::exception_ptr join() {
    if (thread_.joinable()) thread_.join();
    return error_;
  }

 private:
  std::thread thread_;
  std::exception_ptr error_;
};

// Runs `here` on this thread while `earlier` goes on, then waits for it.
// When both fail, earlier's error is the one reported, as doing the two in
// turn would report it.
void finish_beside(BackgroundTask& earlier, const std::function<void()>& here) {
  std::exception_ptr here_error;
  try {
    here();
  } catch (...) {
    here_error = std::current_exception();
  }
  if (std::exception_ptr e = earlier.join()) std::rethrow_exception(e);
  if (here_error) std::rethrow_exception(here_error);
}

// Reads the two programs at once, startup's on a thread of its own. Each
// input's pages go back to the page cache once it is read: the rewrites
// read a few of them, and the writer maps them again as it copies (issue
// 15: held, the inputs were about half of a transpile's peak memory).
std::pair<MappedProgram, MappedProgram> load_programs(const std::string& startup_path,
                                                      const std::string& main_path) {
  const auto load = [](const std::string& path) {
    MappedProgram program = load_program_mapped(path);
    program.file->release_all();
    return program;
  };
  MappedProgram startup, main;
  BackgroundTask reading;
  reading.start([&] { startup = load(startup_path); });
  finish_beside(reading, [&] { main = load(main_path); });
  return {std::move(startup), std::move(main)};
}

// Both rewrites at once (Transpiler::run_concurrently), main's input pages
// given back every 50 ms meanwhile (PagesGivenBack): the rewrite reads a few
// bytes of most ops, which maps nearly all of them again, and they were
// MultiThread all_gather's and local_sgd's peak memory (bench/RESULTS.md,
// session 22). `startup_done` as run_concurrently takes it.
TranspileReport rewrite_both(const Transpiler& transpiler, Program& startup, MappedProgram& main,
                             const std::function<void(const Program&)>& startup_done) {
  std::optional<PagesGivenBack> given_back;
  if (main.file) given_back.emplace(*main.file, std::chrono::milliseconds(50));
  return transpiler.run_concurrently(startup, main.program, startup_done);
}

// Transpiles, the two rewrites at once (rewrite_both), staging startup's
// file once its rewrite is done while main's goes on, then main's. Startup's
// staging error is reported before main's; a rewrite error comes first of
// all (what was staged goes with the OutputSet).
//
// Once staged, startup goes, on the staging thread while main is rewritten:
// its IR and its mapped input are a sixth of a large transpile's peak
// memory, and freeing them there costs the rewrite nothing (issue 15). Its
// heap was another thread's (glibc's per-thread arenas), which main's
// rewrite does not reuse, so it goes back to the system (malloc_trim): about
// 5 MiB of a 100k-op local_sgd's peak.
void transpile_and_stage(const Transpiler& transpiler, MappedProgram startup,
                         MappedProgram& main, OutputSet& output, const fs::path& dir,
                         const Emit& emit) {
  BackgroundTask startup_stage;
  const auto startup_done = [&](const Program&) {
    startup_stage.start([&] {
      {
        const MappedProgram rewritten = std::move(startup);  // its rewrite is done with it
        stage_program(output, program_path(dir, "startup", emit), rewritten.program, emit,
                      rewritten.file.get());
      }
      return_freed_memory();
    });
  };
  report(transpiler, rewrite_both(transpiler, startup.program, main, startup_done));
  finish_beside(startup_stage, [&] {
    stage_program(output, program_path(dir, "main", emit), main.program, emit, main.file.get());
  });
}

// Transpiles once (rank 0), then writes every rank's pair from the shared
// work: the main program is the same for all ranks and is rendered once; each
// rank's startup differs only in a few attributes of the communicator ops.
void stage_all_ranks(const Transpiler& transpiler, Program startup, MappedProgram& main,
                     OutputSet& output, const fs::path& out_dir, const Emit& emit) {
  const std::size_t original_ops = startup.global_block().op_count();
  report(transpiler, rewrite_both(transpiler, startup, main, nullptr));
  // Rank 0's main is written once; the other ranks' are copies of its file.
  const fs::path first_dir = out_dir / "rank_0";
  const fs::path first_main = program_path(first_dir, "main", emit);
  output.make_directories(first_dir.string());
  stage_program(output, first_main, main.program, emit, main.file.get());
  const std::vector<std::string>& endpoints = transpiler.collective().endpoints;
  const StartupRankSpecializer specializer(std::move(startup), original_ops, endpoints);
  const int nranks = static_cast<int>(endpoints.size());
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
          const fs::path dir = out_dir / ("rank_" + std::to_string(r));
          output.make_directories(dir.string());
          stage_program(output, program_path(dir, "startup", emit), specializer.for_rank(r),
                        emit);
          if (r != 0)
            output.stage_copy(program_path(dir, "main", emit).string(), first_main.string());
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
  const std::unique_ptr<Transpiler> transpiler = build_transpiler(a);
  const Emit emit = parse_emit(a.emit);
  std::pair<MappedProgram, MappedProgram> programs = load_programs(a.startup, a.main);
  MappedProgram& startup = programs.first;
  MappedProgram& main = programs.second;
  // Every file of the output (every rank's with --all-ranks) or none: a
  // failure anywhere leaves what was there before.
  OutputSet output(a.out_dir);
  output.make_directories(a.out_dir);
  if (a.all_ranks) {
    stage_all_ranks(*transpiler, std::move(startup.program), main, output, a.out_dir, emit);
  } else {
    transpile_and_stage(*transpiler, std::move(startup), main, output, a.out_dir, emit);
  }
  output.commit();
  keep_until_exit(std::move(main.program));
}

// --nrings' help from each transpiler's ring rules.
std::string nrings_help(const TranspilerRegistry& registry) {
  std::vector<std::string> defaults, fixed;
  for (const TranspilerRegistration& r : registry.all()) {
    if (r.rings.one_ring_only)
      fixed.push_back(r.name);
    else
      defaults.push_back(r.name + " " + std::to_string(r.rings.default_nrings));
  }
  std::string help = "rings to alternate over (default: " + joined(defaults);
  if (!fixed.empty()) help += "; " + joined(fixed) + " always 1";
  return help + ")";
}

// A transpiler's setting as a flag: its help, the modes that take it, its
// choices and its environment variable.
void add_setting_flag(CLI::App* cmd, const TranspilerRegistry::SharedSetting& shared,
                      SettingArg& arg) {
  const TranspilerSetting& s = shared.setting;
  std::string help = joined(shared.transpilers) + " only: " + s.help;
  if (!s.env.empty()) help += " [" + s.env + "]";
  if (s.kind == SettingKind::kList) {
    arg.option = cmd->add_option("--" + s.name, arg.items, help)->delimiter(',');
    return;
  }
  arg.option = cmd->add_option("--" + s.name, arg.text, help);
  if (!s.choices.empty()) arg.option->check(CLI::IsMember(s.choices));
}

// One line per transpiler, for the subcommand's description.
std::string transpiler_list() {
  std::string text = "\n\nModes:";
  for (const TranspilerRegistration& r : builtin_transpilers().all())
    text += "\n  " + r.name + " (" + r.reference_class + "): " + r.summary;
  return text;
}

const CommandRegistrar kRegistrar([](CLI::App& app) {
  auto args = std::make_shared<TranspileArgs>();
  CLI::App* cmd = app.add_subcommand(
      "transpile",
      "Rewrite a startup and a main program for data-parallel training as Paddle's collective "
      "transpiler does; writes OUTDIR/startup.<ext> and OUTDIR/main.<ext> (pb, json or txt), or "
      "OUTDIR/rank_<r>/... for every rank with --all-ranks. Paddle's environment variables "
      "named in [brackets] below are read when set; flags win." + transpiler_list());
  const TranspilerRegistry& registry = builtin_transpilers();
  cmd->add_option("--mode", args->mode, "the transpiler: " + registry.names_text())->required();
  cmd->add_option("--nrings", args->nrings, nrings_help(registry));
  cmd->add_option("--rank", args->rank, "this process's rank");
  cmd->add_option("--endpoints", args->endpoints, "every rank's host:port, comma-separated")
      ->delimiter(',')
      ->required();
  cmd->add_option("--current-endpoint", args->current_endpoint,
                  "this rank's host:port (default: endpoints[rank])");
  cmd->add_flag("--wait-port", args->wait_port,
                "accepted for compatibility; ctp never blocks here (the executor's rendezvous "
                "waits for the other ranks)");
  cmd->add_option("--params", args->params,
                  "which vars are parameters (to broadcast and, for local_sgd, snapshot): "
                  "marked (those marked is_parameter, as the reference), optimizer (the "
                  "persistable Param inputs of the main program's update ops: saved programs "
                  "mark none), or auto (default: marked when any var is; stderr says which)")
      ->check(CLI::IsMember({"marked", "optimizer", "auto"}));
  cmd->add_option("--op-dialect", args->op_dialect,
                  "op names to write: legacy (default: c_broadcast, c_allgather, "
                  "c_comm_init_all, as the reference) or paddle3 (broadcast, all_gather, "
                  "comm_init_all, as Paddle's later collective.py)")
      ->check(CLI::IsMember({"legacy", "paddle3"}));
  for (const auto& shared : registry.settings())
    add_setting_flag(cmd, shared, args->settings[shared.setting.name]);
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
