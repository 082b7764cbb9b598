// The rules of the arithmetic ops: the shapes, dtypes and attributes of
// mul, matmul_v2, the elementwise ops, sum, mean and reduce_mean and their
// gradients, written once as functions of the inputs' metas and the op's
// attributes (Paddle PHI's InferMeta). The schema's inference
// (ops/schema/defs_math.cc) calls them on the declared vars of a block, the
// CPU and CUDA kernels on their tensors: all three give the same shapes and
// fail with the same text, which names the op's place (OpContext::where).
#pragma once
#include <cstdint>
#include <vector>

#include "ops/schema/op_context.h"

namespace ctp::meta {

// Fails unless `a` (of input slot a_slot) and `b` have one dtype.
void require_same_dtype(const OpContext& ctx, std::string_view a_slot, TensorMeta a,
                        std::string_view b_slot, TensorMeta b);
// Fails unless input `slot`'s shape agrees with `expected` (dims unknown on
// either side agree with anything).
void require_shape(const OpContext& ctx, std::string_view slot, const Shape& actual,
                   const Shape& expected);

// Two shapes broadcast against each other, each padded with 1s to the
// result's rank, so that dim d of either is out_shape[d] or a 1 stretched.
struct Broadcast {
  Shape x, y, out_shape;
  bool same_shape = false;  // X and Y had one shape to begin with
};
// mul flattens X to [m, k] at x_num_col_dims and Y to [k, n] at
// y_num_col_dims; Out = X[:x_num_col_dims] ++ Y[y_num_col_dims:].
struct MulMeta {
  int64_t m, k, n;  // -1 where a dim is unknown
  Shape out_shape;
};
MulMeta mul(const OpContext& ctx, TensorMeta x, TensorMeta y);
// mul_grad: mul's rules; Out@GRAD holds m * n elements of X's dtype.
MulMeta mul_grad(const OpContext& ctx, TensorMeta x, TensorMeta y, TensorMeta dout);

// matmul_v2: batches of op(X)[m, k] times op(Y)[k, n]. A 1-D X is a row
// [1, k] and a 1-D Y a column [k, 1]: neither is transposed and its unit dim
// is dropped from Out. The batch dims broadcast as numpy's do.
struct MatmulMeta {
  bool trans_x, trans_y;  // as applied (false for a 1-D operand)
  double alpha = 1;       // Out = alpha * op(X) op(Y) (matmul v1; 1 for matmul_v2)
  int64_t m, k, n;
  Broadcast batch;  // of X's and Y's batch dims (all but the last two)
  int64_t x_matrix, y_matrix;  // elements of one matrix of X and of Y
  Shape out_shape;
};
MatmulMeta matmul_v2(const OpContext& ctx, TensorMeta x, TensorMeta y);
// matmul_v2_grad: matmul_v2's rules; Out@GRAD has Out's shape and X's dtype.
MatmulMeta matmul_v2_grad(const OpContext& ctx, TensorMeta x, TensorMeta y, TensorMeta dout);
// matmul (Paddle's v1): matmul_v2's rules with transpose_X / transpose_Y and
// Out scaled by alpha; two 1-D operands give Out [1] (v1's shape). Refused,
// naming the attribute: head_number other than 1 and the oneDNN fusions
// (fused_reshape_*, fused_transpose_*).
MatmulMeta matmul(const OpContext& ctx, TensorMeta x, TensorMeta y);
MatmulMeta matmul_grad(const OpContext& ctx, TensorMeta x, TensorMeta y, TensorMeta dout);

// Paddle's elementwise broadcasting: Y's dims line up with X's starting at
// `axis` (-1: at the trailing dims), the roles swap when Y has the higher
// rank, trailing 1s of the smaller shape that reach past the larger one are
// dropped (older programs write them), and then a dim of 1 stretches.
// `pair` names the two shapes in messages.
Broadcast broadcast(const OpContext& ctx, const Shape& x, const Shape& y, int64_t axis,
                    const std::string& pair);
// elementwise_add/sub/mul/div: X and Y of one dtype, broadcast at `axis`.
Broadcast elementwise(const OpContext& ctx, TensorMeta x, TensorMeta y);
// Their gradients: the forward rules; Out@GRAD has Out's shape.
Broadcast elementwise_grad(const OpContext& ctx, TensorMeta x, TensorMeta y, TensorMeta dout);
// elementwise_div_grad also reads Out (dY = -dOut * Out / Y, as Paddle's),
// which has Out's shape and X's dtype.
Broadcast elementwise_div_grad(const OpContext& ctx, TensorMeta x, TensorMeta y, TensorMeta out,
                               TensorMeta dout);

// sum: every input of X has the first one's dtype and shape; Out has it.
Shape sum(const OpContext& ctx, const std::vector<TensorMeta>& xs);

// mean_grad: Out@GRAD holds one element.
void mean_grad(const OpContext& ctx, TensorMeta dout);

// reduce_mean over `dim` (all dims with reduce_all, when dim is empty or X
// is 0-D); reduced dims become 1 with keep_dim, else disappear, leaving a
// 0-D Out when none remain (Paddle 2.5 and later).
struct ReduceMeta {
  std::vector<char> reduced;  // per dim of X
  bool keep_dim = false;
  Shape out_shape;
};
ReduceMeta reduce_mean(const OpContext& ctx, TensorMeta x);
// reduce_mean_grad: reduce_mean's rules; Out@GRAD holds Out's elements.
ReduceMeta reduce_mean_grad(const OpContext& ctx, TensorMeta x, TensorMeta dout);

// reduce_sum: reduce_mean's dims; Out has out_dtype, which must be X's
// dtype (unset or negative: X's). Its gradient: reduce_mean_grad's rules.
ReduceMeta reduce_sum(const OpContext& ctx, TensorMeta x);
ReduceMeta reduce_sum_grad(const OpContext& ctx, TensorMeta x, TensorMeta dout);

}  // namespace ctp::meta
