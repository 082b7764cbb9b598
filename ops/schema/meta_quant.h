// The rules of Paddle's simulated-quantization ops as inference programs
// use them (Paddle's fake_quantize_op.cc / fake_dequantize_op.cc), written
// once for the schema's inference (ops/schema/defs_quant.cc) and the CPU and
// CUDA kernels; the element formulas are ops/common/quant_math.h.
//
// Only the inference form (is_test true) of the moving-average quantizers is
// supported: the training form updates the scale's running average
// (InAccum/InState -> OutAccum/OutState) and is refused with an error that
// says so, rather than run with a frozen scale.
#pragma once
#include <cstdint>

#include "ops/schema/op_context.h"

namespace ctp::meta {

// fake_quantize_moving_average_abs_max and
// fake_quantize_dequantize_moving_average_abs_max: X (FP32 or FP64) with
// InScale (one element, X's dtype). Out has X's shape and dtype; OutScale
// (when given) is InScale unchanged. bit_length in [1, 16], round_type 0 or 1.
struct FakeQuantMeta {
  Shape shape;
  int64_t bin_cnt;  // 2^(bit_length - 1) - 1
  int round_type;
};
FakeQuantMeta fake_quantize(const OpContext& ctx, TensorMeta x, TensorMeta in_scale);

// fake_dequantize_max_abs: Out = X * Scale / max_range, X's shape and dtype;
// Scale holds one element of X's dtype; max_range must be positive.
struct FakeDequantMeta {
  Shape shape;
  double max_range;
};
FakeDequantMeta fake_dequantize(const OpContext& ctx, TensorMeta x, TensorMeta scale);

// straight_through_estimator_grad (the gradient of the quantize-dequantize
// ops): X@GRAD = Out@GRAD, its shape and dtype.
Shape straight_through_grad(const OpContext& ctx, TensorMeta dout);

}  // namespace ctp::meta
