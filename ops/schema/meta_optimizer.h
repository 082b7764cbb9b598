// The rules of the optimizer updates (sgd, momentum, adam, lamb), written
// once for the schema's inference (ops/schema/defs_optimizer.cc) and the CPU
// and CUDA kernels; see meta_math.h.
#pragma once
#include <string_view>

#include "ops/schema/op_context.h"

namespace ctp::meta {

// Grad and the state an update keeps per element (Velocity, Moment1,
// Moment2) have Param's shape and dtype.
void require_like_param(const OpContext& ctx, std::string_view slot, TensorMeta param,
                        TensorMeta other);
// LearningRate and the beta powers hold one element.
void require_one_element(const OpContext& ctx, std::string_view slot, TensorMeta t);

// momentum's attributes: v = mu v + (rescale_grad g + l2_decay p), with the
// L2 decay coefficient only under regularization_method "l2_decay" (the only
// method besides none).
struct MomentumAttrs {
  double mu;
  bool use_nesterov;
  double l2_decay;
  double rescale_grad;
};
MomentumAttrs momentum_attrs(const OpContext& ctx);

}  // namespace ctp::meta
