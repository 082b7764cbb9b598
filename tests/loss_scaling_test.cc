// Loss scaling (transpilers/loss_scaling.h, applied by minimize()): the op
// sequence of a tiny minimized FP16 program, op by op; that a power-of-two
// scale trains bit for bit as no scale does (the scale is exact in FP32, so
// a missing or wrong unscale shows); an overflowing step that changes no
// parameter and lowers the scale; the found-Inf flag after the gradient
// all-reduce (grad_allreduce) or all-reduced itself (local_sgd); errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <string>
#include <vector>

#include "executor/executor.h"
#include "program_ir/builder.h"
#include "program_ir/error.h"
#include "tests/kernels_test_util.h"
#include "tests/op_lines.h"
#include "transpilers/minimize.h"
#include "transpilers/transpile.h"

namespace ctp {
namespace {

using test::tensor;
using test::values;

using test::op_lines;

// x [4, 3] -> mul(w [3, 2]) -> h -> mean -> loss.
struct Tiny {
  Program startup = Program::with_global_block();
  Program main;
};

Tiny tiny() {
  ProgramBuilder b;
  b.data("x", {4, 3});
  b.param("w", {3, 2});
  b.tmp("h", {4, 2});
  b.tmp("loss", {1});
  b.op("mul").in("X", "x").in("Y", "w").out("Out", "h");
  b.op("mean").in("X", "h").out("Out", "loss");
  Tiny t;
  t.main = b.build();
  return t;
}

MinimizeOptions sgd(std::optional<AmpOptions> amp) {
  MinimizeOptions o;
  o.loss = "loss";
  o.optimizer.type = OptimizerType::kSgd;
  o.optimizer.learning_rate = 0.5f;
  o.amp = std::move(amp);
  return o;
}

TEST(LossScaling, Fp16MinimizedProgramOpByOp) {
  Tiny t = tiny();
  AmpOptions amp{.dtype = DataType::FP16, .loss_scaling = LossScalingOptions{}};
  const MinimizeResult r = minimize(t.startup, t.main, sgd(amp));
  ASSERT_TRUE(r.loss_scaling);
  EXPECT_EQ(r.loss_scaling->scaled_loss, "loss.scaled");
  const std::vector<std::string> expected = {
      "cast x -> x.cast_fp16",
      "cast w -> w.cast_fp16",
      "mul x.cast_fp16,w.cast_fp16 -> h",
      "cast h -> h.cast_fp32",
      "mean h.cast_fp32 -> loss",
      "elementwise_mul loss,loss_scaling_0 -> loss.scaled",
      "fill_constant -> loss.scaled@GRAD",
      "elementwise_mul_grad loss,loss_scaling_0,loss.scaled@GRAD -> loss@GRAD",
      "mean_grad h.cast_fp32,loss@GRAD -> h.cast_fp32@GRAD",
      "cast h.cast_fp32@GRAD -> h@GRAD",
      "mul_grad x.cast_fp16,w.cast_fp16,h@GRAD -> w.cast_fp16@GRAD",
      "cast w.cast_fp16@GRAD -> w@GRAD",
      "check_finite_and_unscale w@GRAD,loss_scaling_0 -> w@GRAD,find_infinite_scale_0",
      "update_loss_scaling w@GRAD,find_infinite_scale_0,loss_scaling_0,num_good_steps_0,"
      "num_bad_steps_0 -> w@GRAD,loss_scaling_0,num_good_steps_0,num_bad_steps_0",
      "sgd w,w@GRAD,learning_rate_0 -> w",
  };
  EXPECT_EQ(op_lines(t.main), expected);
  for (const char* state : {"loss_scaling_0", "num_good_steps_0", "num_bad_steps_0"}) {
    EXPECT_TRUE(t.main.global_block().var(state).persistable) << state;
    EXPECT_TRUE(t.startup.global_block().has_var(state)) << state;
  }
  EXPECT_EQ(t.main.global_block().var("num_good_steps_0").dtype, DataType::INT32);
  // Both ops run after the backward, in the optimizer's role.
  for (const Op& op : t.main.global_block().ops())
    if (op.type == "check_finite_and_unscale" || op.type == "update_loss_scaling")
      EXPECT_TRUE(is_optimizer_op(op)) << op.type;
}

// FP32 programs with the loss-scaling steps and without (no AMP rewrite:
// scale_loss/unscale_gradients directly), trained from the same weights.
struct Trained {
  std::vector<float> w;
  float scale = 0;
};

// Step i feeds batch data_offset + i; x's columns sum to 11, 6 and -10 in batch 0.
Trained train(const std::optional<LossScalingOptions>& scaling, int steps,
              std::vector<std::vector<float>>* w_after_each = nullptr, int data_offset = 0) {
  Tiny t = tiny();
  std::string loss = "loss";
  std::optional<LossScalingVars> vars;
  if (scaling) {
    vars = scale_loss(t.startup, t.main, "loss", *scaling);
    loss = vars->scaled_loss;
  }
  append_backward(t.main, BackwardOptions{.loss = loss, .no_grad_vars = {}});
  append_optimizer(t.startup, t.main, sgd(std::nullopt).optimizer);
  if (scaling) unscale_gradients(t.main, *vars, *scaling);
  Scope scope;
  Executor(t.startup, {}).run(scope);
  scope.var("w") = tensor<float>({3, 2}, {0.3f, -0.2f, 0.1f, 0.7f, -0.5f, 0.25f});
  Executor step(t.main, {});
  for (int i = 0; i < steps; ++i) {
    std::vector<float> x(12);
    for (int j = 0; j < 12; ++j)
      x[j] = static_cast<float>((j * 7 + (i + data_offset) * 3) % 11) - 4.0f;
    scope.var("x") = tensor<float>({4, 3}, x);
    step.run(scope);
    if (w_after_each) w_after_each->push_back(values<float>(scope.get("w")));
  }
  Trained out{values<float>(scope.get("w")), 0};
  if (vars) out.scale = scope.get(vars->loss_scaling).data<float>()[0];
  return out;
}

TEST(LossScaling, PowerOfTwoScaleTrainsBitForBitAsNoScale) {
  const Trained plain = train(std::nullopt, 3);
  LossScalingOptions o;
  o.init_loss_scaling = 1024.0f;
  o.incr_every_n_steps = 2;  // the scale moves to 2048 midway: still exact
  const Trained scaled = train(o, 3);
  EXPECT_EQ(scaled.w, plain.w);
  EXPECT_EQ(scaled.scale, 2048.0f);
  o.use_dynamic_loss_scaling = false;
  EXPECT_EQ(train(o, 3).w, plain.w);
}

TEST(LossScaling, AnOverflowingStepChangesNothingAndLowersTheScale) {
  LossScalingOptions o;
  // The loss's gradient times this is 3.75e37 per element of h; times x's
  // column sums (11, -10) the weight's gradient overflows FP32.
  o.init_loss_scaling = 3.0e38f;
  o.decr_every_n_nan_or_inf = 1;
  o.decr_ratio = 1.0e-30f;
  std::vector<std::vector<float>> w;
  const Trained t = train(o, 2, &w);
  const std::vector<float> start = {0.3f, -0.2f, 0.1f, 0.7f, -0.5f, 0.25f};
  EXPECT_EQ(w[0], start);  // step 1 overflowed: SGD of zeroed gradients
  EXPECT_NEAR(t.scale, 3.0e8f, 3.0e8 * 1e-6);
  EXPECT_NE(w[1], start);  // step 2 at the lower scale trains
  for (float v : w[1]) EXPECT_TRUE(std::isfinite(v));
  // Step 2 trained as an unscaled step on batch 1 from the start does (at
  // scale 3e8, not a power of two: equal within rounding).
  const Trained plain = train(std::nullopt, 1, nullptr, /*data_offset=*/1);
  for (std::size_t i = 0; i < plain.w.size(); ++i) EXPECT_NEAR(w[1][i], plain.w[i], 1e-5);
}

// The ops after `type`'s first op, by type.
std::vector<std::string> types_after(const Program& p, const std::string& type, std::size_t n) {
  std::vector<std::string> out;
  bool seen = false;
  for (const Op& op : p.global_block().ops()) {
    if (seen && out.size() < n) out.push_back(op.type);
    if (op.type == type) seen = true;
  }
  return out;
}

TEST(LossScaling, WorkersAgreeOnAnOverflowInEveryTranspiledMode) {
  TranspileOptions o;
  o.collective.endpoints = {"127.0.0.1:6170", "127.0.0.1:6171"};
  o.collective.current_endpoint = o.collective.endpoints[0];
  AmpOptions amp{.dtype = DataType::FP16, .loss_scaling = LossScalingOptions{}};
  // grad_allreduce: the gradient is all-reduced before it is checked, so
  // every worker checks the same values; no flag all-reduce is added.
  Tiny g = tiny();
  minimize(g.startup, g.main, sgd(amp));
  transpile(TranspileMode::kGradAllReduce, o, g.startup, g.main);
  std::vector<std::string> types;
  for (const Op& op : g.main.global_block().ops()) types.push_back(op.type);
  const auto at = [&](const std::string& t) {
    return std::find(types.begin(), types.end(), t) - types.begin();
  };
  EXPECT_LT(at("c_allreduce_sum"), at("check_finite_and_unscale"));
  EXPECT_LT(at("c_sync_comm_stream"), at("check_finite_and_unscale"));
  EXPECT_EQ(at("c_allreduce_max"), static_cast<long>(types.size()));
  // local_sgd: each worker checks its own gradient: the flag is all-reduced
  // (max) before update_loss_scaling reads it.
  Tiny l = tiny();
  minimize(l.startup, l.main, sgd(amp));
  transpile(TranspileMode::kLocalSgd, o, l.startup, l.main);
  EXPECT_EQ(types_after(l.main, "check_finite_and_unscale", 6),
            (std::vector<std::string>{"cast", "c_sync_calc_stream", "c_allreduce_max",
                                      "c_sync_comm_stream", "cast", "update_loss_scaling"}));
  // multi_thread all_gather: adam reads gradients gathered before the
  // unscale; refused, naming the mode.
  Tiny a = tiny();
  MinimizeOptions adam = sgd(amp);
  adam.optimizer.type = OptimizerType::kAdam;
  minimize(a.startup, a.main, adam);
  try {
    transpile("multi_thread", o.collective, {{"trans-mode", "all_gather"}}, a.startup, a.main);
    FAIL() << "all_gather took a loss-scaled program";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("trans_mode all_gather cannot take a program with loss "
                                         "scaling"),
              std::string::npos)
        << e.what();
  }
}

TEST(LossScaling, ErrorsNameTheProblemAndChangeNothing) {
  Tiny t = tiny();
  const Program before = t.main;
  LossScalingOptions bad;
  bad.decr_ratio = 1.5f;
  AmpOptions amp{.dtype = DataType::FP16, .loss_scaling = bad};
  try {
    minimize(t.startup, t.main, sgd(amp));
    FAIL() << "decr_ratio 1.5 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("decr_ratio must lie in (0, 1]"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(t.main, before);
  EXPECT_THROW(scale_loss(t.startup, t.main, "nope", LossScalingOptions{}), Error);
  const LossScalingVars vars = scale_loss(t.startup, t.main, "loss", LossScalingOptions{});
  try {
    unscale_gradients(t.main, vars, LossScalingOptions{});
    FAIL() << "unscaling a program without update ops";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no update op"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ctp
