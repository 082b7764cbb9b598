// The rules of the neural-network ops (relu_grad, softmax, softmax_with_cross_entropy,
// cross_entropy2 and their gradients), written once for the schema's inference
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
// The same check for any op with `classes` classes and that ignore_index.
int64_t hard_label_class(const OpContext& ctx, int64_t classes, int64_t ignore_index, int64_t row,
                         int64_t label);
// Its gradient: the same rules on Softmax (the logits' shape); Loss@GRAD
// holds one element per row.
SoftmaxCrossEntropyMeta softmax_with_cross_entropy_grad(const OpContext& ctx, TensorMeta softmax,
                                                        TensorMeta label, TensorMeta dloss);

// softmax: X viewed as [outer, classes, inner] around `axis` (any rank; a
// 0-D X is one class); Out has X's shape.
struct SoftmaxMeta {
  std::size_t axis;
  int64_t outer, classes, inner;  // -1 where unknown
};
SoftmaxMeta softmax(const OpContext& ctx, TensorMeta x);
// softmax_grad reads Out and Out@GRAD, which must have one shape; X@GRAD has it.
SoftmaxMeta softmax_grad(const OpContext& ctx, TensorMeta out, TensorMeta dout);

// cross_entropy2 (Paddle's hard-label cross entropy on probabilities): X is
// [..., classes], read as `rows` rows; Label holds one INT64 or INT32 class
// per row, shaped as X with the last dim 1 or cut off; Y has Label's shape
// (last dim 1 when Label keeps it), MatchX is X with the last dim 1 (the
// probability each row's label picks), XShape is X's shape plus a 0 dim (a
// tensor with no elements that carries X's shape to the gradient).
struct CrossEntropy2Meta {
  int64_t rows, classes;  // -1 where unknown
  Shape x_shape, y_shape, match_x_shape, xshape_shape;
  int64_t ignore_index;
};
CrossEntropy2Meta cross_entropy2(const OpContext& ctx, TensorMeta x, TensorMeta label);
// cross_entropy_grad2: X's shape from XShape; Y@GRAD has Y's shape and
// MatchX its own; X@GRAD has X's shape.
CrossEntropy2Meta cross_entropy_grad2(const OpContext& ctx, TensorMeta xshape, TensorMeta label,
                                      TensorMeta match_x, TensorMeta dy);

}  // namespace ctp::meta
