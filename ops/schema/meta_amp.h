// The rules of the loss-scaling ops of mixed-precision training (Paddle's
// check_finite_and_unscale and update_loss_scaling), written once for the
// schema's inference (ops/schema/defs_amp.cc) and the CPU and CUDA kernels;
// see meta_math.h. The update itself is ops/common/loss_scaling_rule.h.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/schema/op_context.h"

namespace ctp::meta {

// check_finite_and_unscale: X is a list of float tensors (FP32 or FP64 in
// ctp's kernels), each Out i has X i's shape and dtype, Out as many as X;
// Scale holds one float element; FoundInfinite is BOOL [1].
void check_finite_and_unscale(const OpContext& ctx, const std::vector<TensorMeta>& xs,
                              TensorMeta scale);

// update_loss_scaling: X and Out as above; FoundInfinite BOOL with one
// element, PrevLossScaling one float element, InGoodSteps and InBadSteps
// INT32 with one element each. LossScaling, OutGoodSteps and OutBadSteps
// take their inputs' shape and dtype.
void update_loss_scaling(const OpContext& ctx, const std::vector<TensorMeta>& xs,
                         TensorMeta found_infinite, TensorMeta prev_scale, TensorMeta good_steps,
                         TensorMeta bad_steps);

// update_loss_scaling's attributes, checked: both step counts 1 or more,
// incr_ratio 1 or more, decr_ratio in (0, 1] (Paddle's decorator asserts
// the ratios likewise). stop_update keeps the state as it is (the op then
// only zeroes X on overflow).
struct LossScalingAttrs {
  int32_t incr_every_n_steps, decr_every_n_nan_or_inf;
  float incr_ratio, decr_ratio;
  bool stop_update;
};
LossScalingAttrs loss_scaling_attrs(const OpContext& ctx);

}  // namespace ctp::meta
