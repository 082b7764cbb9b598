// The rules of layer_norm and layer_norm_grad, written once for the
// schema's inference (ops/schema/defs_nlp.cc) and the CPU and CUDA kernels;
// see meta_math.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>

#include "ops/schema/op_context.h"

namespace ctp::meta {

// layer_norm: X flattened at begin_norm_axis (in [1, rank)) into `rows`
// rows of `cols` elements, each normalised by its own mean and variance
// (biased); Y = (X - mean) / sqrt(variance + epsilon) * Scale + Bias, with
// Scale and Bias optional, each [cols]. epsilon is in [0, 0.001]. Mean and
// Variance are [rows] of `stat_dtype`: FP32 for FP32, FP16 and BF16 X (as
// Scale and Bias are), FP64 for FP64 X.
struct LayerNormMeta {
  std::size_t begin_norm_axis;
  int64_t rows, cols;  // -1 where unknown
  double epsilon;
  DataType stat_dtype;
  Shape stat_shape;
};
LayerNormMeta layer_norm(const OpContext& ctx, TensorMeta x, std::optional<TensorMeta> scale,
                         std::optional<TensorMeta> bias);
// layer_norm_grad: layer_norm's rules on X, Scale and Bias; Mean and
// Variance have the statistics' shape and dtype, Y@GRAD has X's shape and
// dtype. X@GRAD, Scale@GRAD and Bias@GRAD take their inputs' shapes.
LayerNormMeta layer_norm_grad(const OpContext& ctx, TensorMeta x, std::optional<TensorMeta> scale,
                              std::optional<TensorMeta> bias, TensorMeta mean,
                              TensorMeta variance, TensorMeta dy);

}  // namespace ctp::meta
