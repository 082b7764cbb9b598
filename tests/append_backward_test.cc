// The backward pass (transpilers/append_backward.h) on small programs: it
// writes what the sample MLP's hand-written backward writes, declares the
// @GRAD vars with their forward vars' shapes, sums partial gradients with
// Paddle's names, and refuses bad input naming the place, changing nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "program_ir/builder.h"
#include "program_ir/verify.h"
#include "samples/mlp_model.h"
#include "transpilers/append_backward.h"
#include "transpilers/append_optimizer.h"

namespace ctp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

int32_t role_of(const Op& op) { return static_cast<int32_t>(get_op_role(op).value_or(-1)); }

std::vector<std::string> role_var_of(const Op& op) {
  const Attribute* a = op.attr(kOpRoleVarAttr);
  return a ? a->get<std::vector<std::string>>() : std::vector<std::string>{};
}

// Slots with their vars, empty ones left out (the sample omits them where
// Paddle writes X@GRAD=[]), sorted by name.
std::vector<Slot> filled(std::vector<Slot> slots) {
  std::erase_if(slots, [](const Slot& s) { return s.args.empty(); });
  std::sort(slots.begin(), slots.end(),
            [](const Slot& a, const Slot& b) { return a.name < b.name; });
  return slots;
}

std::vector<const Op*> ops_of(const Program& p) {
  std::vector<const Op*> ops;
  for (const Op& op : p.global_block().ops()) ops.push_back(&op);
  return ops;
}

TEST(AppendBackward, WritesTheSampleMlpsHandWrittenBackward) {
  samples::MlpConfig config;
  config.hidden = {8, 6};
  const samples::MlpPrograms mlp = samples::build_mlp(config);
  Program main = mlp.eval;  // the forward ops only
  const BackwardResult result = append_backward(main, BackwardOptions{.loss = mlp.loss});
  const std::vector<const Op*> got = ops_of(main), want = ops_of(mlp.main);
  // The sample's backward, op by op (its sgd updates come after).
  std::size_t backward_ops = 0;
  for (const Op* op : want) backward_ops += role_of(*op) & op_role::kOptimize ? 0 : 1;
  ASSERT_EQ(got.size(), backward_ops);
  for (std::size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("op " + std::to_string(i) + " " + want[i]->type);
    EXPECT_EQ(got[i]->type, want[i]->type);
    EXPECT_EQ(filled(got[i]->inputs()), filled(want[i]->inputs()));
    EXPECT_EQ(filled(got[i]->outputs()), filled(want[i]->outputs()));
    EXPECT_EQ(role_of(*got[i]), role_of(*want[i]));
    EXPECT_EQ(role_var_of(*got[i]), role_var_of(*want[i]));
  }
  ASSERT_EQ(result.params_grads.size(), mlp.parameters.size());
  for (std::size_t i = 0; i < mlp.parameters.size(); ++i) {
    EXPECT_EQ(result.params_grads[i].param, mlp.parameters[i]);
    EXPECT_EQ(result.params_grads[i].grad, mlp.parameters[i] + "@GRAD");
  }
  EXPECT_TRUE(result.unreached_parameters.empty());
  // Every grad var has its forward var's dtype and shape.
  for (const Var& var : main.global_block().vars()) {
    const std::string name = var.name;
    if (name.size() < 5 || name.substr(name.size() - 5) != "@GRAD") continue;
    const Var& forward = main.global_block().var(name.substr(0, name.size() - 5));
    EXPECT_EQ(var.shape, forward.shape) << name;
    EXPECT_EQ(var.dtype, forward.dtype) << name;
  }
  for (const Diagnostic& d : verify(main).diagnostics)
    EXPECT_NE(d.severity, Diagnostic::Error) << d.place << ": " << d.message;
}

// x -> mul(w) -> h; relu(h) + h -> s; mul(s, w) -> y; mean(y): h and w
// each get their gradient from two ops.
Program shared_program() {
  ProgramBuilder b;
  b.data("x", {-1, 3});
  b.param("w", {3, 3});
  for (const char* v : {"h", "r", "s", "y"}) b.tmp(v, {-1, 3});
  b.tmp("loss", {1});
  b.op("mul").in("X", "x").in("Y", "w").out("Out", "h");
  b.op("relu").in("X", "h").out("Out", "r");
  b.op("elementwise_add").in("X", "r").in("Y", "h").out("Out", "s");
  b.op("mul").in("X", "s").in("Y", "w").out("Out", "y");
  b.op("mean").in("X", "y").out("Out", "loss");
  return b.build();
}

TEST(AppendBackward, SumsPartialGradientsWithPaddlesNames) {
  Program p = shared_program();
  const BackwardResult result = append_backward(p, BackwardOptions{.loss = "loss"});
  std::vector<std::string> lines;
  for (const Op& op : p.global_block().ops()) {
    std::string line = op.type;
    for (const Slot& s : op.outputs())
      for (const std::string& a : s.args) line += " " + a;
    lines.push_back(line);
  }
  EXPECT_THAT(lines, ElementsAre("mul h", "relu r", "elementwise_add s", "mul y", "mean loss",
                                 "fill_constant loss@GRAD", "mean_grad y@GRAD",
                                 "mul_grad s@GRAD w@GRAD@RENAME@block0@0",
                                 "elementwise_add_grad r@GRAD h@GRAD@RENAME@block0@0",
                                 "relu_grad h@GRAD@RENAME@block0@1", "sum h@GRAD",
                                 "mul_grad w@GRAD@RENAME@block0@1", "sum w@GRAD"));
  const Op& last = p.global_block().ops().back();
  EXPECT_THAT(*last.input("X"), ElementsAre("w@GRAD@RENAME@block0@0", "w@GRAD@RENAME@block0@1"));
  EXPECT_EQ(role_var_of(last), (std::vector<std::string>{"w", "w@GRAD"}));
  EXPECT_EQ(role_of(last), op_role::kBackward);
  ASSERT_EQ(result.params_grads.size(), 1u);
  EXPECT_EQ(result.params_grads[0].grad, "w@GRAD");
  EXPECT_EQ(p.global_block().var("h@GRAD@RENAME@block0@1").shape,
            (std::vector<int64_t>{-1, 3}));
  // The loss op is Forward|Loss, its gradient 1 in the loss's shape.
  EXPECT_EQ(role_of(*std::next(p.global_block().ops().begin(), 4)), op_role::kLoss);
  const Op& fill = *std::next(p.global_block().ops().begin(), 5);
  EXPECT_EQ(role_of(fill), op_role::kBackward | op_role::kLoss);
  EXPECT_EQ(*fill.attr("value"), Attribute(1.0f));
  EXPECT_EQ(*fill.attr("shape"), Attribute(std::vector<int64_t>{1}));
}

TEST(AppendBackward, NoGradientThroughStopGradientOrNamedVars) {
  Program p = shared_program();
  const BackwardResult result =
      append_backward(p, BackwardOptions{.loss = "loss", .no_grad_vars = {"s"}});
  // s gets no gradient: the second mul's grad writes only w's, and nothing
  // reaches h, so the first mul has no grad op.
  std::vector<std::string> types;
  for (const Op& op : p.global_block().ops()) types.push_back(op.type);
  EXPECT_THAT(types, ElementsAre("mul", "relu", "elementwise_add", "mul", "mean",
                                 "fill_constant", "mean_grad", "mul_grad"));
  const Op& mul_grad = p.global_block().ops().back();
  EXPECT_TRUE(mul_grad.output("X@GRAD")->empty());
  EXPECT_THAT(*mul_grad.output("Y@GRAD"), ElementsAre("w@GRAD"));
  EXPECT_EQ(result.params_grads.size(), 1u);
  EXPECT_FALSE(p.global_block().has_var("s@GRAD"));
}

std::string error_of(Program& p, const BackwardOptions& options) {
  const Program before = p;
  try {
    append_backward(p, options);
  } catch (const Error& e) {
    EXPECT_EQ(p, before) << "a failed pass changed the program";
    return e.what();
  }
  return "(no error)";
}

TEST(AppendBackward, RefusesBadInputNamingThePlace) {
  Program p = shared_program();
  EXPECT_EQ(error_of(p, {.loss = "nope"}),
            "append_backward: block 0, var 'nope': the loss is not declared in block 0");
  EXPECT_THAT(error_of(p, {.loss = "y"}),
              HasSubstr("var 'y': the loss must be a scalar (shape [1] or [], as Paddle "
                        "requires), but its shape is [-1, 3]"));
  p.global_block().var("loss").dtype = DataType::INT64;
  EXPECT_THAT(error_of(p, {.loss = "loss"}),
              HasSubstr("the loss must be a floating-point tensor, not INT64"));

  // An op without a grad maker on the way from w to the loss.
  Program q = shared_program();
  std::next(q.global_block().ops().begin(), 1)->type = "my_activation";
  EXPECT_THAT(error_of(q, {.loss = "loss"}),
              HasSubstr("append_backward: block 0, op 1 'my_activation': lies on the way from "
                        "parameter 'w' to the loss 'loss' (input X 'h'), but ctp has no schema "
                        "for op type 'my_activation'"));
  std::next(q.global_block().ops().begin(), 1)->type = "concat";
  EXPECT_THAT(error_of(q, {.loss = "loss"}),
              HasSubstr("op 1 'concat': lies on the way from parameter 'w' to the loss 'loss' "
                        "(input X 'h'), but the schema of 'concat' declares no grad maker"));

  // A program that has a backward already.
  Program twice = shared_program();
  append_backward(twice, {.loss = "loss"});
  EXPECT_THAT(error_of(twice, {.loss = "loss"}),
              HasSubstr("op 5 'fill_constant': has role Backward: the program already has a "
                        "backward"));
}

TEST(AppendBackward, AParameterOffThePathIsReportedNotUpdated) {
  Program p = shared_program();
  ProgramBuilder b(std::move(p));
  b.param("unused", {3});
  p = b.build();
  const BackwardResult result = append_backward(p, {.loss = "loss"});
  EXPECT_THAT(result.unreached_parameters, ElementsAre("unused"));
  Program startup = Program::with_global_block();
  append_optimizer(startup, p, OptimizerOptions{});
  for (const Op& op : p.global_block().ops())
    if (op.type == "sgd") EXPECT_THAT(*op.input("Param"), ElementsAre("w"));

  // No parameter at all reaching the loss is an error.
  Program q = shared_program();
  q.global_block().var("w").stop_gradient = true;
  EXPECT_THAT(error_of(q, {.loss = "loss"}),
              HasSubstr("the program has no trainable parameter"));
}

TEST(AppendOptimizer, StateIsPersistableInBothProgramsAndInitialisedInStartup) {
  samples::MlpConfig config;
  const samples::MlpPrograms mlp = samples::build_mlp(config);
  Program main = mlp.eval, startup = Program::with_global_block();
  append_backward(main, {.loss = mlp.loss});
  OptimizerOptions adam;
  adam.type = OptimizerType::kAdam;
  adam.learning_rate = 0.05f;
  append_optimizer(startup, main, adam);
  for (const char* name : {"learning_rate_0", "fc_0.w_0_moment1_0", "fc_0.w_0_moment2_0",
                           "fc_0.w_0_beta1_pow_acc_0", "fc_1.b_0_beta2_pow_acc_0"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(main.global_block().has_var(name));
    ASSERT_TRUE(startup.global_block().has_var(name));
    EXPECT_TRUE(main.global_block().var(name).persistable);
  }
  EXPECT_EQ(main.global_block().var("fc_0.w_0_moment1_0").shape,
            main.global_block().var("fc_0.w_0").shape);
  EXPECT_EQ(main.global_block().var("fc_0.w_0_beta1_pow_acc_0").shape,
            (std::vector<int64_t>{1}));
  std::vector<std::string> updated;
  for (const Op& op : main.global_block().ops()) {
    if (op.type != "adam") continue;
    EXPECT_EQ(role_of(op), op_role::kOptimize);
    updated.push_back(op.input("Param")->at(0));
    EXPECT_EQ(role_var_of(op),
              (std::vector<std::string>{updated.back(), updated.back() + "@GRAD"}));
  }
  // Sorted by name, as Paddle's apply_gradients sorts params_grads.
  EXPECT_THAT(updated, ElementsAre("fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"));
  // Refused: a second optimizer, and options out of range.
  EXPECT_THROW(append_optimizer(startup, main, adam), Error);
  Program fresh = mlp.eval;
  append_backward(fresh, {.loss = mlp.loss});
  adam.learning_rate = -1;
  EXPECT_THROW(append_optimizer(startup, fresh, adam), Error);
}

}  // namespace
}  // namespace ctp
