#include "transpilers/loss_scaling.h"

#include <cmath>
#include <limits>
#include <vector>

#include "program_ir/error.h"
#include "program_ir/op_role.h"
#include "transpilers/rewrite_support.h"

namespace ctp {
namespace {

constexpr std::string_view kPass = "loss_scaling";

[[noreturn]] void fail(const std::string& what) {
  throw Error(SourceLocation{.pass = std::string(kPass)}, what);
}

std::string number(double v) {
  std::string s = std::to_string(v);
  return s;
}

Attribute role(int32_t bits) { return Attribute(bits); }

// The Grad inputs of the update ops from `first` on, in op order.
std::vector<std::string> updated_grads(Block& block, Block::OpHandle first) {
  std::vector<std::string> grads;
  for (auto it = first; it != block.ops().end(); ++it) {
    if (!is_update_op(*it)) continue;
    const std::vector<std::string>* grad = it->input("Grad");
    if (grad && !grad->empty()) grads.push_back(grad->front());
  }
  return grads;
}

void require_declared(const Block& block, const std::string& name) {
  if (!block.has_var(name))
    fail("the loss-scaling var '" + name + "' is not declared in block 0 (run scale_loss on "
         "this program first)");
}

}  // namespace

void check_loss_scaling_options(const LossScalingOptions& o) {
  const float inf = std::numeric_limits<float>::infinity();
  if (!(o.init_loss_scaling > 0.0f && o.init_loss_scaling < inf))
    fail("init_loss_scaling must be positive and finite, not " + number(o.init_loss_scaling));
  if (o.incr_every_n_steps < 1)
    fail("incr_every_n_steps must be 1 or more, not " + std::to_string(o.incr_every_n_steps));
  if (o.decr_every_n_nan_or_inf < 1)
    fail("decr_every_n_nan_or_inf must be 1 or more, not " +
         std::to_string(o.decr_every_n_nan_or_inf));
  if (!(o.incr_ratio >= 1.0f && o.incr_ratio < inf))
    fail("incr_ratio must be 1 or more and finite, not " + number(o.incr_ratio));
  if (!(o.decr_ratio > 0.0f && o.decr_ratio <= 1.0f))
    fail("decr_ratio must lie in (0, 1], not " + number(o.decr_ratio));
}

LossScalingVars scale_loss(Program& startup, Program& main, const std::string& loss,
                           const LossScalingOptions& options) {
  check_loss_scaling_options(options);
  Block& block = main.global_block();
  const Var* loss_var = block.find_var(loss);
  if (!loss_var) fail("the loss '" + loss + "' is not a var of block 0");
  if (loss_var->dtype != DataType::FP32)
    fail("the loss '" + loss + "' is " + std::string(to_string(loss_var->dtype)) +
         "; loss scaling multiplies an FP32 loss (the AMP rewrite keeps losses in FP32)");
  for (const Op& op : block.ops())
    if (is_backward_op(op) || is_optimizer_op(op))
      fail("the program already has a backward ('" + op.type +
           "'): the loss is scaled before append_backward");
  LossScalingVars v;
  v.loss_scaling = unique_var_name(startup, main, "loss_scaling");
  v.scaled_loss = loss + ".scaled";
  for (int i = 1; block.has_var(v.scaled_loss); ++i)
    v.scaled_loss = loss + ".scaled_" + std::to_string(i);
  Var scaled = *loss_var;
  scaled.name = v.scaled_loss;
  scaled.shape = {1};  // a 0-D or [1] loss times the [1] scale
  scaled.persistable = false;
  scaled.stop_gradient = false;
  add_state(startup, main, v.loss_scaling, DataType::FP32, {1}, options.init_loss_scaling);
  if (options.use_dynamic_loss_scaling) {
    v.good_steps = unique_var_name(startup, main, "num_good_steps");
    add_state(startup, main, v.good_steps, DataType::INT32, {1}, 0.0f);
    v.bad_steps = unique_var_name(startup, main, "num_bad_steps");
    add_state(startup, main, v.bad_steps, DataType::INT32, {1}, 0.0f);
  }
  block.add_var(std::move(scaled));
  block.append_op(Op("elementwise_mul", {{"X", {loss}}, {"Y", {v.loss_scaling}}},
                     {{"Out", {v.scaled_loss}}},
                     {{"axis", Attribute(int32_t{-1})}, {kOpRoleAttr, role(op_role::kForward)}}));
  return v;
}

void unscale_gradients(Program& main, const LossScalingVars& vars,
                       const LossScalingOptions& options) {
  check_loss_scaling_options(options);
  Block& block = main.global_block();
  for (const Op& op : block.ops())
    if (op.type == "check_finite_and_unscale" || op.type == "update_loss_scaling")
      fail("the program already has '" + op.type + "': its gradients are unscaled once");
  require_declared(block, vars.loss_scaling);
  if (options.use_dynamic_loss_scaling) {
    require_declared(block, vars.good_steps);
    require_declared(block, vars.bad_steps);
  }
  const Block::OpHandle first = find_first_optimizer_op(block, kPass);
  const std::vector<std::string> grads = updated_grads(block, first);
  if (grads.empty())
    fail("the program has no update op (an op with Param, Grad and LearningRate inputs) "
         "whose gradients loss scaling could unscale: run it after append_optimizer");
  Var found;
  found.name = unique_var_name(main, main, "find_infinite_scale");
  found.dtype = DataType::BOOL;
  found.shape = {1};
  found.stop_gradient = true;
  block.add_var(found);
  block.insert_op(first, Op("check_finite_and_unscale",
                            {{"X", grads}, {"Scale", {vars.loss_scaling}}},
                            {{"Out", grads}, {"FoundInfinite", {found.name}}},
                            {{kOpRoleAttr, role(op_role::kOptimize)}}));
  if (!options.use_dynamic_loss_scaling) return;
  block.insert_op(
      first,
      Op("update_loss_scaling",
         {{"X", grads},
          {"FoundInfinite", {found.name}},
          {"PrevLossScaling", {vars.loss_scaling}},
          {"InGoodSteps", {vars.good_steps}},
          {"InBadSteps", {vars.bad_steps}}},
         {{"Out", grads},
          {"LossScaling", {vars.loss_scaling}},
          {"OutGoodSteps", {vars.good_steps}},
          {"OutBadSteps", {vars.bad_steps}}},
         {{"incr_every_n_steps", Attribute(options.incr_every_n_steps)},
          {"decr_every_n_nan_or_inf", Attribute(options.decr_every_n_nan_or_inf)},
          {"incr_ratio", Attribute(options.incr_ratio)},
          {"decr_ratio", Attribute(options.decr_ratio)},
          {"stop_update", Attribute(false)},
          {kOpRoleAttr, role(op_role::kOptimize)}}));
}

}  // namespace ctp
