// The rules of the neural-network ops (relu_grad, softmax_with_cross_entropy
// and its gradient), written once for the schema's inference
// (ops/schema/defs_nn.cc) and the CPU and CUDA kernels; see meta_math.h.
#pragma once
#include <cstdint>

#include "ops/schema/op_context.h"

namespace ctp::meta {

// relu_grad: Out@GRAD has the shape of the forward tensor that gates it (Out,
// or X from writers that pass that instead).
void relu_grad(const OpContext& ctx, TensorMeta gate, TensorMeta dout);

// softmax_with_cross_entropy: Logits viewed as [outer, classes, inner]
// around `axis`; Softmax has the logits' shape, Loss the same with the class
// dim cut to 1. Hard labels (soft_label false) are INT64 or INT32 class
// indices, one per row (Loss's shape, or as many elements); soft labels are
// distributions of the logits' shape.
struct SoftmaxCrossEntropyMeta {
  std::size_t axis;
  int64_t outer, classes, inner;  // -1 where unknown
  Shape loss_shape;
  bool soft_label, use_softmax;
  int64_t ignore_index;
};
SoftmaxCrossEntropyMeta softmax_with_cross_entropy(const OpContext& ctx, TensorMeta logits,
                                                   TensorMeta label);
// The class a hard label names at `row`: -1 for ignore_index; fails when
// outside [0, classes). (The kernels check labels as they read them.)
int64_t hard_label_class(const OpContext& ctx, const SoftmaxCrossEntropyMeta& m, int64_t row,
                         int64_t label);
// Its gradient: the same rules on Softmax (the logits' shape); Loss@GRAD
// holds one element per row.
SoftmaxCrossEntropyMeta softmax_with_cross_entropy_grad(const OpContext& ctx, TensorMeta softmax,
                                                        TensorMeta label, TensorMeta dloss);

}  // namespace ctp::meta
