// The rules of the ops that reshape and rearrange tensors without
// arithmetic: reshape2, flatten_contiguous_range, squeeze2, unsqueeze2,
// transpose2, slice and stack, and their gradients, written once for the
// schema's inference (ops/schema/defs_shape.cc) and the CPU and CUDA kernels;
// see meta_math.h.
//
// The "2" ops also write XShape, Paddle's carrier of X's shape to the
// gradient: a tensor of shape [0] + X's shape, with no elements. Their grad
// ops read X's shape back from it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/schema/op_context.h"

namespace ctp::meta {

// [0] + x.
Shape xshape_of(const Shape& x);
// The forward X's shape that input `slot` (an XShape) carries; fails unless
// its first dim is 0.
Shape shape_from_xshape(const OpContext& ctx, std::string_view slot, TensorMeta xshape);

// What the four ops that only reinterpret X's elements produce: Out's shape
// (X's element count and order) and XShape's.
struct ReinterpretMeta {
  Shape out_shape;
  Shape xshape;
};
// reshape2 by its `shape` attribute: a 0 copies X's dim at that place, one
// -1 takes the remaining elements. When the op has ShapeTensor (one
// one-element tensor per dim; it wins) or Shape (a 1-D tensor), the shape
// comes at run time: on declared vars only Out's rank is known, and the
// kernels pass the values to reshape2_to (the same rules).
ReinterpretMeta reshape2(const OpContext& ctx, TensorMeta x);
ReinterpretMeta reshape2_to(const OpContext& ctx, TensorMeta x,
                            const std::vector<int64_t>& runtime_shape);
// flatten_contiguous_range: dims start_axis..stop_axis become one (a 0-D X
// becomes [1]).
ReinterpretMeta flatten_contiguous_range(const OpContext& ctx, TensorMeta x);
// flatten2 (Paddle 1.x): X becomes [product of the dims before `axis`,
// product of the rest]; axis in [0, rank] (0: [1, all]).
ReinterpretMeta flatten2(const OpContext& ctx, TensorMeta x);
// squeeze2: the dims of `axes` that are 1 go (every 1 when axes is empty);
// a listed dim that is not 1 stays, as in Paddle 2.
ReinterpretMeta squeeze2(const OpContext& ctx, TensorMeta x);
// unsqueeze2: a 1 inserted at each of `axes`, in order, each axis counted
// in the shape so far (negative ones from its end + 1). AxesTensor and
// AxesTensorList are refused.
ReinterpretMeta unsqueeze2(const OpContext& ctx, TensorMeta x);
// Their gradients (reshape2_grad, flatten_contiguous_range_grad, flatten2_grad,
// squeeze2_grad, unsqueeze2_grad): X@GRAD has the shape XShape carries;
// Out@GRAD has as many elements. Returns X@GRAD's shape.
Shape reinterpret_grad(const OpContext& ctx, TensorMeta xshape, TensorMeta dout);

// transpose2: Out dim i is X dim perm[i] (`axis`, a permutation of X's dims;
// negative entries count from the end).
struct TransposeMeta {
  std::vector<std::size_t> perm;
  Shape x_shape, out_shape, xshape;
};
TransposeMeta transpose2(const OpContext& ctx, TensorMeta x);
// transpose2_grad: X's shape from XShape; Out@GRAD has Out's shape.
TransposeMeta transpose2_grad(const OpContext& ctx, TensorMeta xshape, TensorMeta dout);

// slice of Input along `axes` from `starts` to `ends` (negative ones count
// from the dim's end; both are clamped into the dim, an empty range gives a
// 0 dim); the dims of `decrease_axis` (each of size 1 after slicing) are
// then dropped. StartsTensor, EndsTensor, StartsTensorList and
// EndsTensorList are refused.
struct SliceMeta {
  Shape input_shape;
  Shape sliced_shape;           // Input's rank, each sliced dim its new size
  std::vector<int64_t> begin;   // per dim of Input: the first element taken
  Shape out_shape;              // sliced_shape without the decreased dims
};
SliceMeta slice(const OpContext& ctx, TensorMeta input);
// slice_grad: slice's rules on Input; Out@GRAD has Out's shape. Input@GRAD
// has Input's shape, zero outside the slice.
SliceMeta slice_grad(const OpContext& ctx, TensorMeta input, TensorMeta dout);

// stack: the inputs of X (one shape and dtype) joined along a new dim
// `axis` (in [-(rank + 1), rank]) of Y.
struct StackMeta {
  std::size_t axis;
  std::size_t count;   // inputs
  Shape x_shape, out_shape;
};
StackMeta stack(const OpContext& ctx, const std::vector<TensorMeta>& xs);
// stack_grad: Y@GRAD cut along `axis` into the `count` vars of X@GRAD.
StackMeta stack_grad(const OpContext& ctx, TensorMeta dy, std::size_t count);

}  // namespace ctp::meta
