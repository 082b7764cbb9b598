// Whole-process `ctp transpile` beside the bare libprotobuf parse of the same
// bytes (issue 15 item 4), in one run on one machine.
//
//   transpile_process_bench [--sizes 10000,100000,1000000] [--modes grad_allreduce,...]
//       [--repeat 3] [--dir /tmp/ctp_transpile_process_bench] [--ctp LABEL=PATH ...]
//
// For each size it writes a Paddle-like training program (training_program.h)
// as startup.pb and main.pb, then:
//  - the peer, in this process: libprotobuf (classes generated from
//    framework.proto, tests/libprotobuf/) parses main.pb's bytes, with and
//    without an arena, and writes them back; ctp's library does the same,
//    reading on one thread and on one per core, and keeping the bytes alive
//    as load_program_file does (then writing the unchanged ops as their bytes).
//  - every mode: `ctp transpile --mode M --rank 0 --endpoints <2 ranks>
//    --startup startup.pb --main main.pb -o OUT` as a process of its own, for
//    each --ctp binary in turn (interleaved, so that two builds see the same
//    machine), each into an empty OUT with its inputs in the page cache
//    (prepare_run). Reported: wall time (best and median of --repeat), the child's
//    CPU time, its peak resident memory (wait4's ru_maxrss, measured from a
//    small launcher process: see Launcher), and the ratios
//    that issue 15 asks about: wall / libprotobuf's parse of main.pb, peak
//    memory / input bytes (startup.pb + main.pb), and ns per input op (flat
//    from size to size when a mode is linear).
#include <fcntl.h>
#include <google/protobuf/arena.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <fmt/core.h>
#include <string>
#include <vector>

#include "bench/training_program.h"
#include "program_ir/atomic_file.h"
#include "program_ir/proto_io.h"
#include "tests/libprotobuf/program_compare.h"

extern char** environ;

namespace {

using namespace ctp;
namespace fs = std::filesystem;
namespace check = libprotobuf_check;

struct Mode {
  std::string label;
  std::vector<std::string> flags;
};

const std::vector<Mode>& all_modes() {
  static const std::vector<Mode> modes = {
      {"grad_allreduce", {"--mode", "grad_allreduce"}},
      {"local_sgd", {"--mode", "local_sgd"}},
      {"single_process_multi_thread", {"--mode", "single_process_multi_thread"}},
      {"multi_thread/fuse_all_reduce", {"--mode", "multi_thread"}},
      {"multi_thread/all_gather", {"--mode", "multi_thread", "--trans-mode", "all_gather"}},
      {"multi_thread/all_reduce", {"--mode", "multi_thread", "--trans-mode", "all_reduce"}},
  };
  return modes;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Best of `repeat` runs of make(); what it makes is freed after each
// run's timing, as a process that exits without freeing would.
template <typename Make>
double best_of(int repeat, Make&& make) {
  double best = 1e300;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    auto made = make();
    best = std::min(best, seconds_since(start));
  }
  return best;
}

struct Peer {
  double pb_parse = 0, pb_parse_arena = 0, pb_write = 0;
  // ctp's reader on one thread and on one per core (ProtoReadOptions::threads);
  // "owned": with the bytes kept alive, as load_program_file reads a file
  // (ops keep views; an unchanged op is written back as its bytes).
  double ctp_parse_1 = 0, ctp_parse = 0, ctp_parse_owned = 0, ctp_write = 0, ctp_write_owned = 0;
};

// libprotobuf and ctp's library on the same bytes.
Peer time_peer(const std::string& bytes, int repeat) {
  auto require = [](bool ok, const char* what) {
    if (!ok) throw std::runtime_error(what);
  };
  Peer peer;
  peer.pb_parse = best_of(repeat, [&] {
    auto message = std::make_unique<check::pb::ProgramDesc>();
    require(check::parse(bytes, *message), "libprotobuf cannot parse the program");
    return message;
  });
  peer.pb_parse_arena = best_of(repeat, [&] {
    auto arena = std::make_unique<google::protobuf::Arena>();
    auto* message = google::protobuf::Arena::CreateMessage<check::pb::ProgramDesc>(arena.get());
    require(check::parse(bytes, *message), "libprotobuf cannot parse the program");
    return arena;
  });
  check::pb::ProgramDesc message;
  require(check::parse(bytes, message), "libprotobuf cannot parse the program");
  require(message.SerializeAsString() == bytes, "libprotobuf writes other bytes");
  peer.pb_write = best_of(repeat, [&] { return message.SerializeAsString(); });
  peer.ctp_parse_1 = best_of(repeat, [&] {
    return std::make_unique<Program>(
        parse_program_proto(bytes, "main.pb", ProtoReadOptions{.threads = 1}));
  });
  peer.ctp_parse = best_of(repeat, [&] {
    return std::make_unique<Program>(parse_program_proto(bytes, "main.pb"));
  });
  // `bytes` outlives every program read here: the owner need not own.
  const std::shared_ptr<const void> owner(&bytes, [](const void*) {});
  const ProtoReadOptions owned{.owner = owner};
  peer.ctp_parse_owned = best_of(repeat, [&] {
    return std::make_unique<Program>(parse_program_proto(bytes, "main.pb", owned));
  });
  const Program program = parse_program_proto(bytes, "main.pb");
  require(serialize_program_proto(program) == bytes, "ctp writes other bytes");
  peer.ctp_write = best_of(repeat, [&] { return serialize_program_proto(program); });
  const Program owned_program = parse_program_proto(bytes, "main.pb", owned);
  require(serialize_program_proto(owned_program) == bytes, "ctp writes other bytes (owned)");
  peer.ctp_write_owned = best_of(repeat, [&] { return serialize_program_proto(owned_program); });
  return peer;
}

// Outside the timing, before each run: the previous run's output goes
// (committing over it would free its pages inside the run: a second or more
// at 1M), and the inputs are read through once, so that every run finds them
// in the page cache (the peer's parses, gigabytes at 1M, can push them out).
void prepare_run(const fs::path& out, const std::vector<fs::path>& inputs) {
  fs::remove_all(out);
  std::vector<char> buffer(std::size_t{1} << 20);
  for (const fs::path& input : inputs) {
    std::ifstream in(input, std::ios::binary);
    while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount()) {
    }
  }
}

struct ProcessRun {
  double wall = 0, cpu = 0;
  long peak_kb = 0;
};

// Runs argv as a child process with stdout and stderr in `log`; throws with
// the log's text when it fails.
ProcessRun run_process(const std::vector<std::string>& args, const fs::path& log) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&files, 1, 2);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (spawned != 0) throw std::runtime_error("cannot start " + args[0]);
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid) throw std::runtime_error("wait4 failed");
  ProcessRun run;
  run.wall = seconds_since(start);
  auto secs = [](timeval t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  run.cpu = secs(usage.ru_utime) + secs(usage.ru_stime);
  run.peak_kb = usage.ru_maxrss;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(args[0] + " failed:\n" + read_file(log.string()));
  return run;
}

// Starts the ctp processes from a small process of the bench's own, forked
// before the bench builds anything. A process started from the bench itself
// (posix_spawn's vfork, or fork) inherits the bench's memory accounting, so
// wait4's ru_maxrss would be at least the bench's own high-water mark (the
// programs and libprotobuf messages it built for the peer rows), not ctp's.
class Launcher {
 public:
  Launcher() {
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      close(to[1]);
      close(from[0]);
      serve(to[0], from[1]);
      _exit(0);
    }
    close(to[0]);
    close(from[1]);
    to_child_ = to[1];
    from_child_ = from[0];
  }
  ~Launcher() {
    close(to_child_);
    close(from_child_);
    waitpid(pid_, nullptr, 0);
  }

  ProcessRun run(std::vector<std::string> args, const fs::path& log) {
    args.push_back(log.string());
    put(to_child_, args.size());
    for (const std::string& a : args) put_string(to_child_, a);
    ProcessRun run;
    get(from_child_, run);
    const std::string error = get_string(from_child_);
    if (!error.empty()) throw std::runtime_error(error);
    return run;
  }

 private:
  static void serve(int in, int out) {
    std::size_t count = 0;
    while (read_all(in, &count, sizeof count)) {
      std::vector<std::string> args(count);
      for (std::string& a : args) a = get_string(in);
      const fs::path log = args.back();
      args.pop_back();
      ProcessRun run;
      std::string error;
      try {
        run = run_process(args, log);
      } catch (const std::exception& e) {
        error = e.what();
      }
      put(out, run);
      put_string(out, error);
    }
  }
  static bool read_all(int fd, void* data, std::size_t size) {
    auto* p = static_cast<char*>(data);
    while (size > 0) {
      const ssize_t n = read(fd, p, size);
      if (n <= 0) return false;
      p += n;
      size -= static_cast<std::size_t>(n);
    }
    return true;
  }
  static void write_all(int fd, const void* data, std::size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = write(fd, p, size);
      if (n <= 0) throw std::runtime_error("launcher pipe closed");
      p += n;
      size -= static_cast<std::size_t>(n);
    }
  }
  template <typename T>
  static void put(int fd, const T& value) {
    write_all(fd, &value, sizeof value);
  }
  template <typename T>
  static void get(int fd, T& value) {
    if (!read_all(fd, &value, sizeof value)) throw std::runtime_error("launcher pipe closed");
  }
  static void put_string(int fd, const std::string& s) {
    put(fd, s.size());
    write_all(fd, s.data(), s.size());
  }
  static std::string get_string(int fd) {
    std::size_t size = 0;
    get(fd, size);
    std::string s(size, '\0');
    if (!read_all(fd, s.data(), size)) throw std::runtime_error("launcher pipe closed");
    return s;
  }

  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
};

struct Binary {
  std::string label, path;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times whole `ctp transpile` processes beside libprotobuf's parse of the input"};
  std::vector<std::size_t> sizes{10000, 100000, 1000000};
  std::vector<std::string> only, binaries;
  int repeat = 3;
  std::string dir = (fs::temp_directory_path() / "ctp_transpile_process_bench").string();
  app.add_option("--sizes", sizes, "main program sizes in ops")->delimiter(',');
  app.add_option("--modes", only, "modes to run (labels as printed; default all)")
      ->delimiter(',');
  app.add_option("--repeat", repeat, "runs of each process (best and median reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--dir", dir, "where the programs and outputs go");
  app.add_option("--ctp", binaries, "LABEL=PATH of a ctp binary (repeatable; default: this build's)");
  CLI11_PARSE(app, argc, argv);
  Launcher launcher;  // before anything large is built
  std::vector<Binary> ctps;
  for (const std::string& b : binaries) {
    const auto eq = b.find('=');
    if (eq == std::string::npos) {
      fmt::print(stderr, "--ctp takes LABEL=PATH, not '{}'\n", b);
      return 2;
    }
    ctps.push_back({b.substr(0, eq), b.substr(eq + 1)});
  }
  if (ctps.empty()) ctps.push_back({"ctp", CTP_CLI_PATH});

  const std::vector<std::string> endpoints = {"--endpoints", "127.0.0.1:6170,127.0.0.1:6171"};
  for (std::size_t size : sizes) {
    const fs::path at = fs::path(dir) / std::to_string(size);
    fs::create_directories(at);
    std::size_t ops = 0, input_bytes = 0;
    std::string main_bytes;
    {
      const bench::TrainingPrograms programs = bench::make_training_programs(size);
      ops = programs.main.op_count();
      main_bytes = serialize_program_proto(programs.main);
      const std::string startup_bytes = serialize_program_proto(programs.startup);
      write_file_atomically((at / "main.pb").string(), main_bytes);
      write_file_atomically((at / "startup.pb").string(), startup_bytes);
      input_bytes = main_bytes.size() + startup_bytes.size();
    }
    const Peer peer = time_peer(main_bytes, repeat);
    const double mb = static_cast<double>(main_bytes.size()) / 1e6;
    fmt::print("\n== {} ops: main.pb {:.1f} MB ({:.0f} bytes/op), startup.pb + main.pb {:.1f} MB\n",
               ops, mb, static_cast<double>(main_bytes.size()) / static_cast<double>(ops),
               static_cast<double>(input_bytes) / 1e6);
    auto rate = [&](const char* what, double s) {
      fmt::print("{:<34} {:>9.1f} ms {:>8.0f} MB/s\n", what, s * 1e3, mb / s);
    };
    rate("libprotobuf parse of main.pb", peer.pb_parse);
    rate("libprotobuf parse, arena", peer.pb_parse_arena);
    rate("libprotobuf write", peer.pb_write);
    rate("ctp library parse, 1 thread", peer.ctp_parse_1);
    rate("ctp library parse", peer.ctp_parse);
    rate("ctp library parse, owned", peer.ctp_parse_owned);
    rate("ctp library write", peer.ctp_write);
    rate("ctp library write, owned", peer.ctp_write_owned);
    main_bytes.clear();
    main_bytes.shrink_to_fit();

    fmt::print("{:<10} {:<29} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>7}\n", "binary", "mode",
               "best ms", "median ms", "cpu ms", "peak MB", "x parse", "x input", "ns/op");
    for (const Mode& mode : all_modes()) {
      if (!only.empty() && std::find(only.begin(), only.end(), mode.label) == only.end())
        continue;
      std::vector<std::vector<ProcessRun>> runs(ctps.size());
      for (int r = 0; r < repeat; ++r) {
        for (std::size_t c = 0; c < ctps.size(); ++c) {
          std::vector<std::string> args = {ctps[c].path, "transpile"};
          args.insert(args.end(), mode.flags.begin(), mode.flags.end());
          args.insert(args.end(), endpoints.begin(), endpoints.end());
          const fs::path out = at / ("out_" + ctps[c].label);
          args.insert(args.end(), {"--rank", "0", "--startup", (at / "startup.pb").string(),
                                   "--main", (at / "main.pb").string(), "-o", out.string()});
          prepare_run(out, {at / "startup.pb", at / "main.pb"});
          runs[c].push_back(launcher.run(args, at / "log.txt"));
        }
      }
      for (std::size_t c = 0; c < ctps.size(); ++c) {
        std::vector<ProcessRun>& rs = runs[c];
        std::sort(rs.begin(), rs.end(),
                  [](const ProcessRun& a, const ProcessRun& b) { return a.wall < b.wall; });
        const ProcessRun& best = rs.front();
        const double median = rs[rs.size() / 2].wall;
        long peak = 0;
        for (const ProcessRun& r : rs) peak = std::max(peak, r.peak_kb);
        const double peak_mb = static_cast<double>(peak) * 1024 / 1e6;
        fmt::print("{:<10} {:<29} {:>9.0f} {:>9.0f} {:>9.0f} {:>9.0f} {:>8.1f} {:>8.2f} {:>7.0f}\n",
                   ctps[c].label, mode.label, best.wall * 1e3, median * 1e3, best.cpu * 1e3,
                   peak_mb, best.wall / peer.pb_parse,
                   peak_mb / (static_cast<double>(input_bytes) / 1e6),
                   best.wall * 1e9 / static_cast<double>(ops));
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
