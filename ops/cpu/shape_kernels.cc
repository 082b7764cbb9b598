// reshape2, flatten_contiguous_range, flatten2, squeeze2, unsqueeze2, transpose2, slice
// and stack with their gradients, for every dtype (they move elements,
// whatever they hold).
//
// The four ops that only reinterpret X copy its elements into Out rather
// than share X's buffer: Out's var may already be a view into
// coalesce_tensor's fused buffer (a gradient), which sharing would detach,
// and an op that later writes Out in place (sum accumulating gradients, an
// optimizer) would change X as well. A copy costs one pass over memory.
// When Out is X itself, only the shape changes.
#include <cstring>

#include "ops/common/shape_inputs.h"
#include "ops/common/strided_copy.h"
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/schema/meta_shape.h"

namespace ctp::cpu {
namespace {

// `out` = src's elements with `shape`.
void copy_as(const Tensor& src, Tensor& out, const Shape& shape) {
  if (out.initialized() && out.raw_data() == src.raw_data() && out.dtype() == src.dtype()) {
    out.reshape(shape);
    return;
  }
  out.resize(src.dtype(), shape);
  if (src.bytes() > 0) std::memcpy(out.raw_data(), src.raw_data(), src.bytes());
}

void write_xshape(KernelContext& ctx, const Tensor& x, const Shape& xshape) {
  if (ctx.has_output("XShape")) ctx.output("XShape").resize(x.dtype(), xshape);
}

template <auto rule>
void reinterpret(KernelContext& ctx) {
  const Tensor x = ctx.input("X");
  const meta::ReinterpretMeta m = rule(ctx, meta_of(x));
  write_xshape(ctx, x, m.xshape);
  copy_as(x, ctx.output("Out"), m.out_shape);
}

// reshape2: the shape from ShapeTensor or Shape when the op gives them.
void reshape2(KernelContext& ctx) {
  const Tensor x = ctx.input("X");
  const std::optional<std::vector<int64_t>> given = runtime_shape(
      ctx, [&](std::string_view slot, std::size_t i) { return ctx.input(slot, i); });
  const meta::ReinterpretMeta m = given ? meta::reshape2_to(ctx, meta_of(x), *given)
                                        : meta::reshape2(ctx, meta_of(x));
  write_xshape(ctx, x, m.xshape);
  copy_as(x, ctx.output("Out"), m.out_shape);
}

// shape: Input's dims (INT32).
void shape(KernelContext& ctx) {
  copy_tensor(dims_tensor(ctx.shape_input("Input").shape()), ctx.output("Out"));
}

void reinterpret_grad(KernelContext& ctx) {
  const Tensor dout = ctx.input("Out@GRAD");
  const Shape x = meta::reinterpret_grad(ctx, meta_of(ctx.input("XShape")), meta_of(dout));
  if (ctx.has_output("X@GRAD")) copy_as(dout, ctx.output("X@GRAD"), x);
}

// `out` resized to (src's dtype, shape), then `copy` from src into it.
void strided(KernelContext& ctx, const Tensor& src, Tensor& out, const Shape& shape,
             const StridedCopy& copy, bool zero_first = false) {
  const std::size_t bytes = movable_element_size(ctx, src.dtype());
  out.resize(src.dtype(), shape);
  if (zero_first && out.bytes() > 0) std::memset(out.raw_data(), 0, out.bytes());
  copy_strided_on_host(copy, src.raw_data(), out.raw_data(), bytes);
}

void transpose2(KernelContext& ctx) {
  const Tensor x = ctx.input("X");
  const meta::TransposeMeta m = meta::transpose2(ctx, meta_of(x));
  write_xshape(ctx, x, m.xshape);
  strided(ctx, x, ctx.output("Out"), m.out_shape, transpose_copy(m));
}

void transpose2_grad(KernelContext& ctx) {
  const Tensor dout = ctx.input("Out@GRAD");
  const meta::TransposeMeta m =
      meta::transpose2_grad(ctx, meta_of(ctx.input("XShape")), meta_of(dout));
  if (ctx.has_output("X@GRAD"))
    strided(ctx, dout, ctx.output("X@GRAD"), m.x_shape, reversed(transpose_copy(m)));
}

void slice(KernelContext& ctx) {
  const Tensor input = ctx.input("Input");
  const meta::SliceMeta m = meta::slice(ctx, meta_of(input));
  strided(ctx, input, ctx.output("Out"), m.out_shape, slice_copy(m));
}

// Input@GRAD: zero, with Out@GRAD where the slice came from.
void slice_grad(KernelContext& ctx) {
  const Tensor& input = ctx.shape_input("Input");
  const Tensor dout = ctx.input("Out@GRAD");
  const meta::SliceMeta m = meta::slice_grad(ctx, meta_of(input), meta_of(dout));
  if (ctx.has_output("Input@GRAD"))
    strided(ctx, dout, ctx.output("Input@GRAD"), m.input_shape, reversed(slice_copy(m)), true);
}

void stack(KernelContext& ctx) {
  std::vector<Tensor> xs;  // handles: Y may be one of the inputs' vars
  std::vector<TensorMeta> metas;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) xs.push_back(ctx.input("X", i));
  for (const Tensor& x : xs) metas.push_back(meta_of(x));
  const meta::StackMeta m = meta::stack(ctx, metas);
  const std::size_t bytes = movable_element_size(ctx, xs[0].dtype());
  Tensor& y = ctx.output("Y");
  y.resize(xs[0].dtype(), m.out_shape);
  for (std::size_t i = 0; i < xs.size(); ++i)
    copy_strided_on_host(stack_copy(m, i), xs[i].raw_data(), y.raw_data(), bytes);
}

void stack_grad(KernelContext& ctx) {
  const Tensor dy = ctx.input("Y@GRAD");
  const std::size_t count = ctx.output_count("X@GRAD");
  const meta::StackMeta m = meta::stack_grad(ctx, meta_of(dy), count);
  for (std::size_t i = 0; i < count; ++i) {
    if (ctx.output_names("X@GRAD")[i] == "@EMPTY@") continue;  // an input with no gradient
    strided(ctx, dy, ctx.output("X@GRAD", i), m.x_shape, reversed(stack_copy(m, i)));
  }
}

}  // namespace

CTP_REGISTER_KERNEL(reshape2, CPU, reshape2);
CTP_REGISTER_KERNEL(shape, CPU, shape);
CTP_REGISTER_KERNEL(flatten_contiguous_range, CPU, reinterpret<meta::flatten_contiguous_range>);
CTP_REGISTER_KERNEL(flatten2, CPU, reinterpret<meta::flatten2>);
CTP_REGISTER_KERNEL(squeeze2, CPU, reinterpret<meta::squeeze2>);
CTP_REGISTER_KERNEL(unsqueeze2, CPU, reinterpret<meta::unsqueeze2>);
CTP_REGISTER_KERNEL(reshape2_grad, CPU, reinterpret_grad);
CTP_REGISTER_KERNEL(flatten_contiguous_range_grad, CPU, reinterpret_grad);
CTP_REGISTER_KERNEL(flatten2_grad, CPU, reinterpret_grad);
CTP_REGISTER_KERNEL(squeeze2_grad, CPU, reinterpret_grad);
CTP_REGISTER_KERNEL(unsqueeze2_grad, CPU, reinterpret_grad);
CTP_REGISTER_KERNEL(transpose2, CPU, transpose2);
CTP_REGISTER_KERNEL(transpose2_grad, CPU, transpose2_grad);
CTP_REGISTER_KERNEL(slice, CPU, slice);
CTP_REGISTER_KERNEL(slice_grad, CPU, slice_grad);
CTP_REGISTER_KERNEL(stack, CPU, stack);
CTP_REGISTER_KERNEL(stack_grad, CPU, stack_grad);

}  // namespace ctp::cpu
