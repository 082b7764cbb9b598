#include "ops/schema/meta_amp.h"

#include <limits>
#include <string>

#include "ops/schema/meta_optimizer.h"
#include "ops/schema/shape_rules.h"

namespace ctp::meta {
namespace {

bool is_float(DataType t) {
  return t == DataType::FP32 || t == DataType::FP64 || t == DataType::FP16 ||
         t == DataType::BF16;
}

std::string dtype_name(DataType t) { return std::string(to_string(t)); }

void require_float_list(const OpContext& ctx, const std::vector<TensorMeta>& xs) {
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (!is_float(xs[i].dtype))
      ctx.fail(ctx.describe_input("X", i) + " has dtype " + dtype_name(xs[i].dtype) +
               "; gradients to check must be FP32, FP64, FP16 or BF16");
  if (ctx.output_count("Out") != xs.size())
    ctx.fail("has " + std::to_string(xs.size()) + " X input(s) but " +
             std::to_string(ctx.output_count("Out")) + " Out output(s); they must pair up");
}

void require_dtype(const OpContext& ctx, std::string_view slot, TensorMeta t, DataType want) {
  if (t.dtype != want)
    ctx.fail(ctx.describe_input(slot) + " has dtype " + dtype_name(t.dtype) + "; it must be " +
             dtype_name(want));
}

void require_float_scale(const OpContext& ctx, std::string_view slot, TensorMeta t) {
  if (t.dtype != DataType::FP32 && t.dtype != DataType::FP64)
    ctx.fail(ctx.describe_input(slot) + " has dtype " + dtype_name(t.dtype) +
             "; a loss scaling must be FP32 or FP64");
  require_one_element(ctx, slot, t);
}

int32_t positive_steps(const OpContext& ctx, std::string_view name) {
  const int64_t v = ctx.int_attr(name);
  if (v < 1 || v > std::numeric_limits<int32_t>::max())
    ctx.fail("attribute " + std::string(name) + " is " + std::to_string(v) +
             "; it must be 1 or more");
  return static_cast<int32_t>(v);
}

}  // namespace

void check_finite_and_unscale(const OpContext& ctx, const std::vector<TensorMeta>& xs,
                              TensorMeta scale) {
  require_float_list(ctx, xs);
  require_float_scale(ctx, "Scale", scale);
}

void update_loss_scaling(const OpContext& ctx, const std::vector<TensorMeta>& xs,
                         TensorMeta found_infinite, TensorMeta prev_scale, TensorMeta good_steps,
                         TensorMeta bad_steps) {
  require_float_list(ctx, xs);
  require_dtype(ctx, "FoundInfinite", found_infinite, DataType::BOOL);
  require_one_element(ctx, "FoundInfinite", found_infinite);
  require_float_scale(ctx, "PrevLossScaling", prev_scale);
  require_dtype(ctx, "InGoodSteps", good_steps, DataType::INT32);
  require_one_element(ctx, "InGoodSteps", good_steps);
  require_dtype(ctx, "InBadSteps", bad_steps, DataType::INT32);
  require_one_element(ctx, "InBadSteps", bad_steps);
  loss_scaling_attrs(ctx);
}

LossScalingAttrs loss_scaling_attrs(const OpContext& ctx) {
  LossScalingAttrs a;
  a.incr_every_n_steps = positive_steps(ctx, "incr_every_n_steps");
  a.decr_every_n_nan_or_inf = positive_steps(ctx, "decr_every_n_nan_or_inf");
  const double incr = ctx.float_attr("incr_ratio");
  const double decr = ctx.float_attr("decr_ratio");
  if (!(incr >= 1.0) || !(incr < std::numeric_limits<float>::infinity()))
    ctx.fail("attribute incr_ratio is " + std::to_string(incr) + "; it must be 1 or more, finite");
  if (!(decr > 0.0 && decr <= 1.0))
    ctx.fail("attribute decr_ratio is " + std::to_string(decr) + "; it must be in (0, 1]");
  a.incr_ratio = static_cast<float>(incr);
  a.decr_ratio = static_cast<float>(decr);
  a.stop_update = ctx.bool_attr("stop_update");
  return a;
}

}  // namespace ctp::meta
