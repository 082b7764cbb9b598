// The rules of top_k, top_k_v2 and accuracy (and top_k's gradients), written
// once for the schema's inference (ops/schema/defs_metrics.cc) and the CPU
// and CUDA kernels; see meta_math.h. Paddle's facts: top_k_op.cc (v1),
// phi's TopKInferMeta (v2) and AccuracyInferMeta.
#pragma once
#include <cstdint>
#include <optional>

#include "ops/schema/op_context.h"

namespace ctp::meta {

// top_k (v1: the last axis, largest first) and top_k_v2 (attributes axis and
// largest): X viewed as [outer, n, inner] around the axis; Out (X's dtype)
// and Indices (INT64) are X with the axis dim cut to k. k is the attribute,
// or `k_given` (the kernels pass the K input's value when the op has one;
// on declared vars the outputs' axis dim is then unknown, -1). k must be 1 or
// more and at most the axis dim. A 0-D X is one element (k 1, 0-D outputs).
// Order: descending (largest) or ascending values, NaN above every number,
// equal values by lower index first (CPU and CUDA alike).
struct TopKMeta {
  int64_t outer, n, inner;  // -1 where unknown
  int64_t k;                // -1 where unknown
  bool largest;
  Shape out_shape;
};
TopKMeta top_k(const OpContext& ctx, TensorMeta x, std::optional<int64_t> k_given);
// top_k_grad / top_k_v2_grad: Indices and Out@GRAD have the forward output's
// shape (their k is theirs), Indices INT64; X@GRAD has X's shape.
TopKMeta top_k_grad(const OpContext& ctx, TensorMeta x, TensorMeta indices, TensorMeta dout);

// accuracy on top-k results: Out [N, k] (the values, read for their shape),
// Indices of Out's shape (INT64), Label [N, 1] (INT64 or INT32). Accuracy is
// FP32 [1], Correct and Total INT32 [1]. A row counts as correct when one of
// its k indices is its label.
struct AccuracyMeta {
  int64_t rows, k;  // -1 where unknown
};
AccuracyMeta accuracy(const OpContext& ctx, TensorMeta out, TensorMeta indices, TensorMeta label);
// A row's label as accuracy reads it: fails when negative (Paddle's check).
int64_t accuracy_label(const OpContext& ctx, int64_t row, int64_t label);

}  // namespace ctp::meta
