#include "transpilers/append_optimizer.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>
#include <vector>

#include "program_ir/error.h"
#include "program_ir/op_role.h"
#include "transpilers/rewrite_support.h"

namespace ctp {
namespace {

constexpr std::string_view kPass = "append_optimizer";

struct TypeName {
  OptimizerType type;
  std::string_view name;
};
constexpr TypeName kTypeNames[] = {
    {OptimizerType::kSgd, "sgd"},     {OptimizerType::kMomentum, "momentum"},
    {OptimizerType::kAdam, "adam"},   {OptimizerType::kAdamW, "adamw"},
    {OptimizerType::kLamb, "lamb"},   {OptimizerType::kRmsprop, "rmsprop"}};

[[noreturn]] void fail(const std::string& what) {
  throw Error(SourceLocation{.pass = std::string(kPass)}, what);
}

// One piece of an optimizer's per-parameter state (Paddle's accumulators):
// its name suffix, and its start value; a beta power is one FP32 element.
struct Accumulator {
  std::string suffix;
  bool beta_power;
  float start;
};

std::vector<Accumulator> accumulators_of(const OptimizerOptions& o) {
  switch (o.type) {
    case OptimizerType::kSgd: return {};
    case OptimizerType::kMomentum: return {{"velocity", false, 0.0f}};
    case OptimizerType::kAdam:
    case OptimizerType::kAdamW:
    case OptimizerType::kLamb:
      // Paddle starts the powers at beta: the first step's correction is 1 - beta.
      return {{"moment1", false, 0.0f},
              {"moment2", false, 0.0f},
              {"beta1_pow_acc", true, o.beta1},
              {"beta2_pow_acc", true, o.beta2}};
    case OptimizerType::kRmsprop:
      return {{"momentum", false, 0.0f}, {"mean_square", false, 0.0f}, {"mean_grad", false, 0.0f}};
  }
  return {};
}

float epsilon_of(const OptimizerOptions& o) {
  if (o.epsilon) return *o.epsilon;
  return o.type == OptimizerType::kAdam || o.type == OptimizerType::kAdamW ? 1e-8f : 1e-6f;
}

void check_options(const OptimizerOptions& o) {
  auto in_unit = [](float v) { return v >= 0.0f && v < 1.0f; };
  if (!(o.learning_rate > 0.0f) || !std::isfinite(o.learning_rate))
    fail("the learning rate must be positive and finite, not " + std::to_string(o.learning_rate));
  if (!in_unit(o.beta1) || !in_unit(o.beta2))
    fail("beta1 and beta2 must lie in [0, 1), not " + std::to_string(o.beta1) + " and " +
         std::to_string(o.beta2));
  if (!(epsilon_of(o) > 0.0f)) fail("epsilon must be positive");
  if (o.momentum && !(*o.momentum >= 0.0f)) fail("momentum must not be negative");
  if (o.weight_decay && !(*o.weight_decay >= 0.0f)) fail("weight decay must not be negative");
  if (!(o.rho > 0.0f && o.rho <= 1.0f)) fail("rho must lie in (0, 1]");
}

// The [param, grad] pairs of the backward ops, one per parameter, sorted by
// parameter name (Paddle's apply_gradients sorts params_grads so).
std::vector<ParamGrad> params_grads_of(const Block& block) {
  std::vector<ParamGrad> pairs;
  std::unordered_set<std::string> seen;
  std::size_t position = 0;
  for (const Op& op : block.ops()) {
    const SourceLocation at{.pass = std::string(kPass), .block = block.idx,
                            .op = static_cast<int64_t>(position++), .op_type = op.type};
    if (is_update_op(op) || is_optimizer_op(op))
      throw Error(at, "the program already has an optimizer; append_optimizer takes a program "
                      "with a backward and no update ops");
    if (!is_backward_op(op)) continue;
    for (ParamGrad& pg : param_grad_pairs(op)) {
      if (!block.has_var(pg.param) || !block.has_var(pg.grad))
        throw Error(at, "op_role_var names '" + pg.param + "' and '" + pg.grad +
                            "', which block 0 does not both declare");
      if (seen.insert(pg.param).second) pairs.push_back(std::move(pg));
    }
  }
  std::sort(pairs.begin(), pairs.end(),
            [](const ParamGrad& a, const ParamGrad& b) { return a.param < b.param; });
  return pairs;
}

std::vector<NamedAttribute> adam_attrs(const OptimizerOptions& o) {
  return {{"beta1", Attribute(o.beta1)},
          {"beta2", Attribute(o.beta2)},
          {"epsilon", Attribute(epsilon_of(o))},
          {"lazy_mode", Attribute(false)},
          {"min_row_size_to_use_multithread", Attribute(int64_t{1000})},
          {"multi_precision", Attribute(false)},
          {"use_global_beta_pow", Attribute(false)}};
}

// The update op of one parameter, its state named by `state` in
// accumulators_of's order.
Op update_op(const OptimizerOptions& o, const ParamGrad& pg, const std::string& lr,
             const std::vector<std::string>& state) {
  const std::vector<Slot> common = {{"Param", {pg.param}}, {"Grad", {pg.grad}},
                                    {"LearningRate", {lr}}};
  Op op;
  switch (o.type) {
    case OptimizerType::kSgd:
      op = Op("sgd", common, {{"ParamOut", {pg.param}}}, {{"multi_precision", Attribute(false)}});
      break;
    case OptimizerType::kMomentum:
      op = Op("momentum", common, {{"ParamOut", {pg.param}}, {"VelocityOut", {state[0]}}},
              {{"mu", Attribute(o.momentum.value_or(0.9f))},
               {"use_nesterov", Attribute(o.use_nesterov)}});
      op.set_input("Velocity", {state[0]});
      break;
    case OptimizerType::kAdam:
    case OptimizerType::kAdamW:
    case OptimizerType::kLamb: {
      const bool lamb = o.type == OptimizerType::kLamb;
      op = Op(std::string(to_string(o.type)), common,
              {{"ParamOut", {pg.param}}, {"Moment1Out", {state[0]}}, {"Moment2Out", {state[1]}},
               {"Beta1PowOut", {state[2]}}, {"Beta2PowOut", {state[3]}}},
              lamb ? std::vector<NamedAttribute>{{"beta1", Attribute(o.beta1)},
                                                 {"beta2", Attribute(o.beta2)},
                                                 {"epsilon", Attribute(epsilon_of(o))},
                                                 {"weight_decay",
                                                  Attribute(o.weight_decay.value_or(0.01f))},
                                                 {"always_adapt", Attribute(false)},
                                                 {"multi_precision", Attribute(false)}}
                   : adam_attrs(o));
      op.set_input("Moment1", {state[0]});
      op.set_input("Moment2", {state[1]});
      op.set_input("Beta1Pow", {state[2]});
      op.set_input("Beta2Pow", {state[3]});
      if (o.type == OptimizerType::kAdamW) {
        op.set_attr("coeff", Attribute(o.weight_decay.value_or(0.01f)));
        op.set_attr("lr_ratio", Attribute(1.0f));
        op.set_attr("with_decay", Attribute(true));
      }
      break;
    }
    case OptimizerType::kRmsprop:
      op = Op("rmsprop",
              {{"Param", {pg.param}}, {"MeanSquare", {state[1]}}, {"Grad", {pg.grad}},
               {"Moment", {state[0]}}, {"LearningRate", {lr}}, {"MeanGrad", {state[2]}}},
              {{"ParamOut", {pg.param}}, {"MomentOut", {state[0]}},
               {"MeanSquareOut", {state[1]}}, {"MeanGradOut", {state[2]}}},
              {{"epsilon", Attribute(epsilon_of(o))}, {"decay", Attribute(o.rho)},
               {"momentum", Attribute(o.momentum.value_or(0.0f))},
               {"centered", Attribute(o.centered)}});
      break;
  }
  op.set_attr(kOpRoleAttr, Attribute(op_role::kOptimize));
  op.set_attr(kOpRoleVarAttr, Attribute(std::vector<std::string>{pg.param, pg.grad}));
  return op;
}

}  // namespace

std::string_view to_string(OptimizerType type) {
  for (const TypeName& t : kTypeNames)
    if (t.type == type) return t.name;
  return "?";
}

std::optional<OptimizerType> optimizer_type_from_string(std::string_view name) {
  for (const TypeName& t : kTypeNames)
    if (t.name == name) return t.type;
  return std::nullopt;
}

std::string optimizer_type_names() {
  std::string names;
  for (const TypeName& t : kTypeNames) names += (names.empty() ? "" : ", ") + std::string(t.name);
  return names;
}

void append_optimizer(Program& startup, Program& main, const OptimizerOptions& options) {
  check_options(options);
  const std::vector<ParamGrad> pairs = params_grads_of(main.global_block());
  if (pairs.empty())
    fail("no backward op names a [param, grad] pair in op_role_var: run append_backward first");
  Program new_startup = startup, new_main = main;
  const std::string lr = unique_var_name(new_startup, new_main, "learning_rate");
  add_state(new_startup, new_main, lr, DataType::FP32, {1}, options.learning_rate);
  const std::vector<Accumulator> accumulators = accumulators_of(options);
  std::vector<std::vector<std::string>> states;
  for (const ParamGrad& pg : pairs) {
    const Var& param = new_main.global_block().var(pg.param);
    const DataType dtype = param.dtype;
    const std::vector<int64_t> shape = param.shape;
    std::vector<std::string> state;
    for (const Accumulator& acc : accumulators) {
      state.push_back(unique_var_name(new_startup, new_main, pg.param + "_" + acc.suffix));
      add_state(new_startup, new_main, state.back(), acc.beta_power ? DataType::FP32 : dtype,
                acc.beta_power ? std::vector<int64_t>{1} : shape, acc.start);
    }
    states.push_back(std::move(state));
  }
  for (std::size_t i = 0; i < pairs.size(); ++i)
    new_main.global_block().append_op(update_op(options, pairs[i], lr, states[i]));
  startup = std::move(new_startup);
  main = std::move(new_main);
}

}  // namespace ctp
