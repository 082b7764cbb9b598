// The rules of the activation ops (tanh, sigmoid, sqrt, square, gelu), clip
// and dropout and of their gradients, written once for the schema's
// inference (ops/schema/defs_activation.cc) and the CPU and CUDA kernels;
// see meta_math.h. The element formulas both kernels compute are in
// ops/common/activation_math.h and ops/common/dropout_mask.h.
#pragma once
#include <cstdint>
#include <string_view>

#include "ops/schema/op_context.h"

namespace ctp::meta {

// tanh, sigmoid, sqrt, square, gelu: Out has X's shape and dtype.
Shape activation(const OpContext& ctx, TensorMeta x);
// Their gradients read Out (tanh_grad, sigmoid_grad, sqrt_grad) or X
// (square_grad, gelu_grad), named by `in_slot`, which has Out@GRAD's shape
// and dtype; X@GRAD has them too.
Shape activation_grad(const OpContext& ctx, std::string_view in_slot, TensorMeta in,
                      TensorMeta dout);

// clip: Out has X's shape. Min and Max, when given (null when not), hold
// one element each and take the place of the min and max attributes.
Shape clip(const OpContext& ctx, TensorMeta x, const TensorMeta* min, const TensorMeta* max);
// clip_grad: clip's rules; Out@GRAD has X's shape and dtype.
Shape clip_grad(const OpContext& ctx, TensorMeta x, const TensorMeta* min, const TensorMeta* max,
                TensorMeta dout);
// The bounds a kernel clips to: fails unless min <= max (Paddle's check,
// made where the values are known: the attributes, or the Min/Max tensors).
void clip_bounds(const OpContext& ctx, double min, double max);

// dropout: Out has X's shape, Mask (UINT8, 1 = kept) too. dropout_prob in
// [0, 1]; dropout_implementation "downgrade_in_infer" (train: Out = X * Mask,
// test: Out = X * (1 - p)) or "upscale_in_train" (train: Out = X * Mask /
// (1 - p), test: Out = X). The mask's seed: the Seed input (one integer)
// when given, else the seed attribute when fix_seed, else a fresh one.
struct DropoutMeta {
  float prob;
  bool is_test, upscale_in_train, fix_seed;
  int64_t seed;
  Shape shape;
};
DropoutMeta dropout(const OpContext& ctx, TensorMeta x, const TensorMeta* seed);
// dropout_grad: dropout's attribute rules; Mask is UINT8 of Out@GRAD's shape.
DropoutMeta dropout_grad(const OpContext& ctx, TensorMeta mask, TensorMeta dout);

}  // namespace ctp::meta
