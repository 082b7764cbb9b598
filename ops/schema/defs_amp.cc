// The loss-scaling ops of mixed-precision training: check_finite_and_unscale
// and update_loss_scaling (Paddle's amp ops; no gradients). The rules are
// ops/schema/meta_amp.h.
#include "ops/schema/defs_common.h"
#include "ops/schema/meta_amp.h"

namespace ctp::defs {
namespace {

std::vector<TensorMeta> x_list(const InferContext& ctx) {
  std::vector<TensorMeta> xs;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) xs.push_back(ctx.input_meta("X", i));
  return xs;
}

void pass_through_x(InferContext& ctx) {
  if (ctx.input_count("X") == ctx.output_count("Out")) ctx.pass_through("X", "Out");
}

void infer_check_finite_and_unscale(InferContext& ctx) {
  meta::check_finite_and_unscale(ctx, x_list(ctx), ctx.input_meta("Scale"));
  pass_through_x(ctx);
  ctx.set_output("FoundInfinite", {1}, DataType::BOOL);
}

void infer_update_loss_scaling(InferContext& ctx) {
  meta::update_loss_scaling(ctx, x_list(ctx), ctx.input_meta("FoundInfinite"),
                            ctx.input_meta("PrevLossScaling"), ctx.input_meta("InGoodSteps"),
                            ctx.input_meta("InBadSteps"));
  pass_through_x(ctx);
  ctx.pass_through("PrevLossScaling", "LossScaling");
  ctx.pass_through("InGoodSteps", "OutGoodSteps");
  ctx.pass_through("InBadSteps", "OutBadSteps");
}

}  // namespace

void add_amp_op_defs(OpRegistry& r) {
  // Out = X / Scale (as X * (1 / Scale)); FoundInfinite: any X holds Inf or NaN.
  add_def(r,
          {"check_finite_and_unscale",
           {many("X"), one("Scale")},
           {many("Out"), one("FoundInfinite")},
           {}},
          infer_check_finite_and_unscale, GradMaker::none());
  // Out = X, or zeros when FoundInfinite; the scale and step counters move
  // by ops/common/loss_scaling_rule.h (not at all when StopUpdate, the input,
  // or stop_update, the attribute, says so).
  add_def(r,
          {"update_loss_scaling",
           {many("X"), one("FoundInfinite"), one("PrevLossScaling"), one("InGoodSteps"),
            one("InBadSteps"), optional_one("StopUpdate")},
           {many("Out"), one("LossScaling"), one("OutGoodSteps"), one("OutBadSteps")},
           {required("incr_every_n_steps", AttrType::INT),
            required("decr_every_n_nan_or_inf", AttrType::INT),
            required("incr_ratio", AttrType::FLOAT), required("decr_ratio", AttrType::FLOAT),
            attr("stop_update", Attribute(false))}},
          infer_update_loss_scaling, GradMaker::none());
}

CTP_REGISTER_OP_DEFS(add_amp_op_defs);

}  // namespace ctp::defs
