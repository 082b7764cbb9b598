// Loss scaling for FP16 mixed precision, as Paddle's static AMP decorator
// (paddle.static.amp's OptimizerWithMixedPrecision) writes it, in two steps
// around the backward and the optimizer:
//   1. scale_loss, on the forward program: declares the loss scaling
//      (loss_scaling_0, FP32 [1], starting at init_loss_scaling) and, when
//      dynamic, the step counters num_good_steps_0 / num_bad_steps_0 (INT32
//      [1], 0), persistable in main and startup (fill_constant there), and
//      appends `elementwise_mul(loss, loss_scaling_0) -> <loss>.scaled`.
//      The backward is then taken of the scaled loss, so every gradient on
//      the way is scaled and FP16's small ones do not flush to zero.
//   2. unscale_gradients, on the program with its optimizer: before the
//      first update op, `check_finite_and_unscale` divides every gradient
//      the update ops read by the scale in place and sets
//      find_infinite_scale_0 (BOOL [1]) when one holds Inf or NaN; when
//      dynamic, `update_loss_scaling` then zeroes every gradient on such a
//      step (an SGD step then changes nothing; momentum and Adam still move
//      by their state, as in Paddle) and moves the scale: down by decr_ratio
//      after decr_every_n_nan_or_inf overflowing steps, up by incr_ratio
//      after incr_every_n_steps finite steps in a row.
// Both ops have role Optimize, so a transpiler's gradient all-reduce (which
// precedes the first Optimize op) runs before them: every worker checks the
// same reduced gradients and keeps the same scale. A mode that does not
// reduce gradients (local_sgd) all-reduces the flag with max
// (transpilers/found_infinite_sync.h).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "program_ir/program.h"

namespace ctp {

// Paddle's static decorate() defaults.
struct LossScalingOptions {
  float init_loss_scaling = 32768.0f;
  bool use_dynamic_loss_scaling = true;
  int32_t incr_every_n_steps = 1000;
  int32_t decr_every_n_nan_or_inf = 2;
  float incr_ratio = 2.0f;
  float decr_ratio = 0.8f;
};

// Throws ctp::Error naming the option when one is out of range:
// init_loss_scaling positive and finite, step counts 1 or more, incr_ratio
// 1 or more (finite), decr_ratio in (0, 1].
void check_loss_scaling_options(const LossScalingOptions& options);

struct LossScalingVars {
  std::string loss_scaling;            // loss_scaling_0
  std::string good_steps, bad_steps;   // empty unless dynamic
  std::string scaled_loss;             // what append_backward takes
};

// Step 1. Throws ctp::Error, changing nothing, when the options are out of
// range, the loss is not an FP32 var of main's global block, or the program
// already has a backward.
LossScalingVars scale_loss(Program& startup, Program& main, const std::string& loss,
                           const LossScalingOptions& options);

// Step 2. Throws ctp::Error, changing nothing, when main has no update op
// (an op with Param, Grad and LearningRate) or already checks gradients.
void unscale_gradients(Program& main, const LossScalingVars& vars,
                       const LossScalingOptions& options);

}  // namespace ctp
