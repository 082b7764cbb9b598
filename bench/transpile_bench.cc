// Times each transpile mode on Paddle-like MLP programs of 10k, 100k and 1M
// ops and prints the time per program and per op, so that growth can be read
// off directly (linear: the ns/op column stays flat).
//
//   transpile_bench [--sizes 10000,100000,1000000] [--repeat 5] [--modes grad_allreduce,...]
//
// Each layer is mul, elementwise_add, relu (forward), relu_grad,
// elementwise_add_grad, mul_grad (backward, the last two with op_role_var) and
// two adam ops (optimize), eight ops and two params per layer. Timed: the main
// pass (CPU time of the thread and wall time, best of --repeat) and the startup
// pass (CPU time); building and copying the programs is not timed. ns/op is
// main-pass CPU time per input op: flat when the rewrite is linear.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <string>
#include <vector>

#include "program_ir/op_role.h"
#include "program_ir/program.h"
#include "transpilers/transpile.h"

namespace {

using namespace ctp;

Var make_var(std::string name, std::vector<int64_t> shape, bool persistable = false,
             bool parameter = false) {
  Var v;
  v.name = std::move(name);
  v.shape = std::move(shape);
  v.persistable = persistable;
  v.is_parameter = parameter;
  return v;
}

Op make(std::string type, std::vector<Slot> in, std::vector<Slot> out, int32_t role,
        std::vector<std::string> role_var = {}) {
  Op op(std::move(type), std::move(in), std::move(out));
  op.set_attr(kOpRoleAttr, Attribute(role));
  if (!role_var.empty()) op.set_attr(kOpRoleVarAttr, Attribute(std::move(role_var)));
  return op;
}

struct Programs {
  Program startup;
  Program main;
};

Programs build(std::size_t target_ops) {
  const std::size_t layers = std::max<std::size_t>(1, (target_ops - 4) / 8);
  Programs p{Program::with_global_block(), Program::with_global_block()};
  Block& s = p.startup.global_block();
  Block& m = p.main.global_block();
  m.add_var(make_var("x", {-1, 64}));
  m.add_var(make_var("lr", {1}, true));
  s.add_var(make_var("lr", {1}, true));
  auto name = [](const char* stem, std::size_t i) { return std::string(stem) + std::to_string(i); };
  std::vector<std::string> params;
  std::string in = "x";
  for (std::size_t i = 0; i < layers; ++i) {
    const std::string w = name("fc.w_", i), b = name("fc.b_", i);
    for (const std::string& prm : {w, b}) {
      const std::vector<int64_t> shape = prm == w ? std::vector<int64_t>{64, 64}
                                                  : std::vector<int64_t>{64};
      m.add_var(make_var(prm, shape, true, true));
      s.add_var(make_var(prm, shape, true, true));
      m.add_var(make_var(prm + "@GRAD", shape));
      for (const char* st : {"_m1", "_m2", "_b1", "_b2"}) {
        m.add_var(make_var(prm + st, shape, true));
      }
      s.append_op(make("uniform_random", {}, {{"Out", {prm}}}, op_role::kForward));
      params.push_back(prm);
    }
    const std::string mo = name("mul.out_", i), ao = name("add.out_", i), ro = name("relu.out_", i);
    for (const std::string& t : {mo, ao, ro}) {
      m.add_var(make_var(t, {-1, 64}));
      m.add_var(make_var(t + "@GRAD", {-1, 64}));
    }
    m.append_op(make("mul", {{"X", {in}}, {"Y", {w}}}, {{"Out", {mo}}}, op_role::kForward));
    m.append_op(make("elementwise_add", {{"X", {mo}}, {"Y", {b}}}, {{"Out", {ao}}},
                     op_role::kForward));
    m.append_op(make("relu", {{"X", {ao}}}, {{"Out", {ro}}}, op_role::kForward));
    in = ro;
  }
  m.add_var(make_var("loss", {1}));
  m.add_var(make_var("loss@GRAD", {1}));
  m.append_op(make("mean", {{"X", {in}}}, {{"Out", {"loss"}}}, op_role::kForward | op_role::kLoss));
  m.append_op(make("fill_constant", {}, {{"Out", {"loss@GRAD"}}},
                   op_role::kBackward | op_role::kLoss));
  m.append_op(make("mean_grad", {{"Out@GRAD", {"loss@GRAD"}}}, {{"X@GRAD", {in + "@GRAD"}}},
                   op_role::kBackward));
  for (std::size_t i = layers; i-- > 0;) {
    const std::string w = name("fc.w_", i), b = name("fc.b_", i);
    const std::string mo = name("mul.out_", i), ao = name("add.out_", i), ro = name("relu.out_", i);
    m.append_op(make("relu_grad", {{"Out@GRAD", {ro + "@GRAD"}}}, {{"X@GRAD", {ao + "@GRAD"}}},
                     op_role::kBackward));
    m.append_op(make("elementwise_add_grad", {{"Out@GRAD", {ao + "@GRAD"}}},
                     {{"X@GRAD", {mo + "@GRAD"}}, {"Y@GRAD", {b + "@GRAD"}}}, op_role::kBackward,
                     {b, b + "@GRAD"}));
    m.append_op(make("mul_grad", {{"Out@GRAD", {mo + "@GRAD"}}}, {{"Y@GRAD", {w + "@GRAD"}}},
                     op_role::kBackward, {w, w + "@GRAD"}));
  }
  for (const std::string& prm : params) {
    Op adam = make("adam",
                   {{"Param", {prm}}, {"Grad", {prm + "@GRAD"}}, {"LearningRate", {"lr"}},
                    {"Moment1", {prm + "_m1"}}, {"Moment2", {prm + "_m2"}},
                    {"Beta1Pow", {prm + "_b1"}}, {"Beta2Pow", {prm + "_b2"}}},
                   {{"ParamOut", {prm}}, {"Moment1Out", {prm + "_m1"}},
                    {"Moment2Out", {prm + "_m2"}}, {"Beta1PowOut", {prm + "_b1"}},
                    {"Beta2PowOut", {prm + "_b2"}}},
                   op_role::kOptimize, {prm, prm + "@GRAD"});
    adam.set_attr("beta1", Attribute(0.9f));
    adam.set_attr("beta2", Attribute(0.999f));
    adam.set_attr("epsilon", Attribute(1e-8f));
    adam.set_attr("lazy_mode", Attribute(false));
    adam.set_attr("min_row_size_to_use_multithread", Attribute(int64_t{1000}));
    m.append_op(std::move(adam));
  }
  return p;
}

// CPU time of this thread: what the transpile costs on one core, whatever
// else the machine is running.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

struct Mode {
  const char* label;
  TranspileMode mode;
  MultiThreadTransMode trans_mode;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times each transpile mode on programs of growing size"};
  std::vector<std::size_t> sizes{10000, 100000, 1000000};
  int repeat = 5;
  std::vector<std::string> only;
  app.add_option("--sizes", sizes, "program sizes in ops")->delimiter(',');
  app.add_option("--modes", only, "modes to run (labels as printed; default all)")
      ->delimiter(',');
  app.add_option("--repeat", repeat, "runs per size and mode (the minimum is reported)");
  CLI11_PARSE(app, argc, argv);

  const std::vector<Mode> modes = {
      {"grad_allreduce", TranspileMode::kGradAllReduce, {}},
      {"local_sgd", TranspileMode::kLocalSgd, {}},
      {"single_process_multi_thread", TranspileMode::kSingleProcessMultiThread, {}},
      {"multi_thread/fuse_all_reduce", TranspileMode::kMultiThread,
       MultiThreadTransMode::kFuseAllReduce},
      {"multi_thread/all_gather", TranspileMode::kMultiThread, MultiThreadTransMode::kAllGather},
      {"multi_thread/all_reduce", TranspileMode::kMultiThread, MultiThreadTransMode::kAllReduce},
  };
  TranspileOptions options;
  options.collective.endpoints = {"10.0.0.1:6170", "10.0.0.2:6170", "10.0.0.3:6170",
                                  "10.0.0.4:6170"};
  options.collective.rank = 1;
  options.collective.current_endpoint = options.collective.endpoints[1];
  options.multi_thread.gpu_num = 1;  // all_gather: one adam copy per rank

  std::printf("%-30s %9s %9s %10s %10s %8s %11s\n", "mode", "main ops", "out ops", "cpu ms",
              "wall ms", "ns/op", "startup ms");
  for (std::size_t size : sizes) {
    const Programs base = build(size);
    const std::size_t in_ops = base.main.global_block().op_count();
    for (const Mode& m : modes) {
      if (!only.empty() && std::find(only.begin(), only.end(), m.label) == only.end()) continue;
      // One untimed run first: the heap then holds the memory a run needs, as
      // in `ctp transpile`, whose loader has grown it already. On a VM a first
      // touch of fresh pages can otherwise cost more than the rewrite itself.
      double best_cpu = 1e300, best_wall = 1e300, best_startup = 1e300;
      std::size_t out_ops = 0;
      for (int run = 0; run <= repeat; ++run) {
        Programs p = base;
        TranspileOptions o = options;
        o.multi_thread.trans_mode = m.trans_mode;
        NameGenerator names;
        const auto transpiler = make_transpiler(m.mode, o);
        auto startup_pass = transpiler->startup_pass(names);
        auto main_pass = transpiler->main_pass(names);
        const double c0 = thread_cpu_ms();
        startup_pass->run(p.startup);
        const double c1 = thread_cpu_ms();
        const auto w0 = std::chrono::steady_clock::now();
        main_pass->run(p.main);
        const auto w1 = std::chrono::steady_clock::now();
        const double c2 = thread_cpu_ms();
        if (run == 0) continue;  // the warm-up
        best_startup = std::min(best_startup, c1 - c0);
        best_cpu = std::min(best_cpu, c2 - c1);
        best_wall = std::min(best_wall, std::chrono::duration<double, std::milli>(w1 - w0).count());
        out_ops = p.main.global_block().op_count();
      }
      std::printf("%-30s %9zu %9zu %10.2f %10.2f %8.1f %11.2f\n", m.label, in_ops, out_ops,
                  best_cpu, best_wall, best_cpu * 1e6 / static_cast<double>(in_ops),
                  best_startup);
      std::fflush(stdout);
    }
  }
  return 0;
}
