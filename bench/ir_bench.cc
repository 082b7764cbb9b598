// Times writing and reading a large program in both exchange formats.
//
//   ir_bench [--ops N] [--format proto|json|copy|all]   (default 1,000,000 ops, all)
//
// The program is a stack of fully connected layers as Paddle's static graph
// builds them: per layer mul / elementwise_add / relu forward, their three
// grad ops, and two sgd updates, each op with 2-3 slots and 3-4 attributes
// (op_role, op_role_var on the grad and update ops, op_namescope, ...).
#include <time.h>

#include <chrono>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "program_ir/builder.h"
#include "program_ir/json_io.h"
#include "program_ir/program_io.h"
#include "program_ir/proto_io.h"

namespace {

using namespace ctp;
constexpr int kOpsPerLayer = 8;

Program build_program(long target_ops) {
  ProgramBuilder pb;
  pb.persistable("learning_rate_0", {1});
  pb.data("h_0", {-1, 256});
  const long layers = (target_ops + kOpsPerLayer - 1) / kOpsPerLayer;
  for (long i = 0; i < layers; ++i) {
    const std::string n = std::to_string(i);
    const std::string h = "h_" + n, h_next = "h_" + std::to_string(i + 1);
    const std::string w = "fc_" + n + ".w_0", b = "fc_" + n + ".b_0";
    const std::string m = "fc_" + n + ".tmp_0", a = "fc_" + n + ".tmp_1";
    const std::string scope = "/fc_" + n + "/";
    pb.param(w, {256, 256});
    pb.param(b, {256});
    pb.tmp(m, {-1, 256});
    pb.tmp(a, {-1, 256});
    pb.tmp(h_next, {-1, 256});
    for (const std::string& g : {h + "@GRAD", m + "@GRAD", a + "@GRAD", w + "@GRAD", b + "@GRAD"})
      pb.tmp(g, {-1, 256});

    pb.op("mul").in("X", h).in("Y", w).out("Out", m).role(op_role::kForward)
        .attr("x_num_col_dims", int32_t{1}).attr("y_num_col_dims", int32_t{1})
        .attr("op_namescope", scope);
    pb.op("elementwise_add").in("X", m).in("Y", b).out("Out", a).role(op_role::kForward)
        .attr("axis", int32_t{1}).attr("op_namescope", scope);
    pb.op("relu").in("X", a).out("Out", h_next).role(op_role::kForward)
        .attr("use_cudnn", false).attr("op_namescope", scope);
    pb.op("relu_grad").in("Out", h_next).in("Out@GRAD", h_next + "@GRAD")
        .out("X@GRAD", a + "@GRAD").role(op_role::kBackward).attr("use_cudnn", false)
        .attr("op_namescope", scope);
    pb.op("elementwise_add_grad").in("X", m).in("Y", b).in("Out@GRAD", a + "@GRAD")
        .out("X@GRAD", m + "@GRAD").out("Y@GRAD", b + "@GRAD").role(op_role::kBackward)
        .role_var({b, b + "@GRAD"}).attr("axis", int32_t{1}).attr("op_namescope", scope);
    pb.op("mul_grad").in("X", h).in("Y", w).in("Out@GRAD", m + "@GRAD")
        .out("X@GRAD", h + "@GRAD").out("Y@GRAD", w + "@GRAD").role(op_role::kBackward)
        .role_var({w, w + "@GRAD"}).attr("x_num_col_dims", int32_t{1})
        .attr("y_num_col_dims", int32_t{1});
    for (const std::string& p : {w, b})
      pb.op("sgd").in("Param", p).in("Grad", p + "@GRAD").in("LearningRate", "learning_rate_0")
          .out("ParamOut", p).role(op_role::kOptimize).role_var({p, p + "@GRAD"})
          .attr("op_namescope", std::string("/optimizer/"));
  }
  return pb.build();
}

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Wall and CPU time: the dev container's cores are shared, and CPU time
// shows what the work itself costs when the wall clock is inflated.
struct Timing {
  double wall = 0, cpu = 0;
};

template <typename F>
Timing measure(F&& f) {
  auto start = std::chrono::steady_clock::now();
  double cpu_start = cpu_seconds();
  f();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
          cpu_seconds() - cpu_start};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Times serializing and parsing a large program (protobuf and JSON)");
  long ops = 1'000'000;
  app.add_option("--ops", ops, "approximate number of ops")->check(CLI::PositiveNumber);
  // One format per process gives each the same start: memory freed by one
  // format's run would otherwise spare the next one its page faults.
  std::string only = "all";
  app.add_option("--format", only, "proto, json, copy (a deep copy, for scale) or all")
      ->check(CLI::IsMember({"proto", "json", "copy", "all"}));
  CLI11_PARSE(app, argc, argv);

  Program program;
  const Timing build = measure([&] { program = build_program(ops); });
  std::size_t vars = 0;
  for (const Block& b : program.blocks) vars += b.var_count();
  fmt::print("program: {} ops, {} vars (built in {:.2f} s)\n", program.op_count(), vars,
             build.wall);

  auto row = [](const char* what, Timing t, std::size_t bytes) {
    fmt::print("{:<12} {:>6.2f} s wall  {:>6.2f} s cpu  {:>7.1f} MB  {:>6.1f} MB/s (wall)\n", what,
               t.wall, t.cpu, static_cast<double>(bytes) / 1e6,
               static_cast<double>(bytes) / 1e6 / t.wall);
  };
  // What building this IR costs at all: a deep copy allocates and fills the
  // same objects a parser must, with no decoding. A parser cannot beat it.
  if (only == "copy" || only == "all") {
    Program copy;
    const Timing t = measure([&] { copy = program; });
    fmt::print("{:<12} {:>6.2f} s wall  {:>6.2f} s cpu  (the IR's own allocation cost)\n",
               "deep copy", t.wall, t.cpu);
  }
  // Each format: write, parse (with format detection, as `ctp` loads),
  // check that the program read back is the program, then free it.
  for (ProgramFormat format : {ProgramFormat::Proto, ProgramFormat::Json}) {
    const char* name = format == ProgramFormat::Proto ? "proto" : "json";
    if (only != "all" && only != name) continue;
    std::string bytes;
    Program read;
    const Timing write = measure([&] { bytes = serialize_program(program, format); });
    const Timing parse = measure([&] { read = parse_program(bytes, "bench"); });
    if (!(read == program)) {
      fmt::print(stderr, "error: the {} program read back differs from the one written\n", name);
      return 1;
    }
    row((std::string(name) + " write").c_str(), write, bytes.size());
    row((std::string(name) + " parse").c_str(), parse, bytes.size());
  }
  return 0;
}
