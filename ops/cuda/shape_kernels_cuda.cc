// CUDA kernels of reshape2, flatten_contiguous_range, flatten2, squeeze2, unsqueeze2,
// transpose2, slice and stack (and their gradients) under the rules of
// ops/schema/meta_shape.h, for every dtype. As on the CPU
// (ops/cpu/shape_kernels.cc, which says why), the ops that only reinterpret
// X copy it into Out (one device-to-device copy on the compute stream)
// unless Out is X.
#include <cuda_runtime.h>

#include "executor/cuda/cuda_check.h"
#include "ops/common/shape_inputs.h"
#include "ops/common/strided_copy.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/shape_device_kernels.h"
#include "ops/schema/meta_shape.h"

namespace ctp::cuda {
namespace {

launch::Stream stream_of(KernelContext& ctx) { return device_context(ctx).compute_stream(); }

launch::StridedIndex index_of(KernelContext& ctx, const StridedCopy& c) {
  if (c.shape.size() > static_cast<std::size_t>(launch::kMaxDims))
    ctx.fail("the GPU kernel copies at most " + std::to_string(launch::kMaxDims) +
             " dims, got " + std::to_string(c.shape.size()));
  launch::StridedIndex index;
  index.rank = static_cast<int>(c.shape.size());
  for (std::size_t d = 0; d < c.shape.size(); ++d) {
    index.shape[d] = c.shape[d];
    index.src_strides[d] = c.src_strides[d];
    index.dst_strides[d] = c.dst_strides[d];
  }
  index.src_offset = c.src_offset;
  index.dst_offset = c.dst_offset;
  return index;
}

// Output `out_slot` = input `in_slot`'s elements with `shape`.
void copy_as(KernelContext& ctx, const char* in_slot, const char* out_slot, const Shape& shape) {
  if (!ctx.has_output(out_slot)) return;
  Tensor& in = device_input(ctx, in_slot);
  if (ctx.output_names(out_slot)[0] == ctx.input_names(in_slot)[0]) {
    in.reshape(shape);  // in place: the same elements
    return;
  }
  const Tensor src = in;
  Tensor& out = device_output(ctx, out_slot, 0, src.dtype(), shape);
  if (src.bytes() > 0)
    CTP_CUDA_CHECK(cudaMemcpyAsync(out.raw_data(), src.raw_data(), src.bytes(),
                                   cudaMemcpyDeviceToDevice, stream_of(ctx)));
}

void write_xshape(KernelContext& ctx, const Tensor& x, const Shape& xshape) {
  if (ctx.has_output("XShape")) device_output(ctx, "XShape", 0, x.dtype(), xshape);
}

template <auto rule>
void reinterpret(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const meta::ReinterpretMeta m = rule(ctx, meta_of(x));
  write_xshape(ctx, x, m.xshape);
  copy_as(ctx, "X", "Out", m.out_shape);
}

// reshape2: the shape from ShapeTensor or Shape (read back to the host)
// when the op gives them.
void reshape2(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  DeviceContext& dc = device_context(ctx);
  const std::optional<std::vector<int64_t>> given =
      runtime_shape(ctx, [&](std::string_view slot, std::size_t i) {
        const Tensor& t = ctx.input(slot, i);
        return t.device().kind == DeviceKind::CPU ? t : dc.to_host(t);
      });
  const meta::ReinterpretMeta m = given ? meta::reshape2_to(ctx, meta_of(x), *given)
                                        : meta::reshape2(ctx, meta_of(x));
  write_xshape(ctx, x, m.xshape);
  copy_as(ctx, "X", "Out", m.out_shape);
}

// shape: Input's dims (INT32), uploaded; Input itself is not read.
void shape(KernelContext& ctx) {
  const Tensor dims = dims_tensor(ctx.shape_input("Input").shape());
  Tensor& out = device_output(ctx, "Out", 0, DataType::INT32, dims.shape());
  copy_bytes(dims, out, stream_of(ctx));
}

void reinterpret_grad(KernelContext& ctx) {
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const Shape x = meta::reinterpret_grad(ctx, meta_of(ctx.input("XShape")), meta_of(dout));
  copy_as(ctx, "Out@GRAD", "X@GRAD", x);
}

// Output i of `out_slot` resized to (src's dtype, shape) on the GPU, then
// `copy` from src into it (zeroed first when asked).
void strided(KernelContext& ctx, const Tensor& src, const char* out_slot, std::size_t i,
             const Shape& shape, const StridedCopy& copy, bool zero_first = false) {
  const int bytes = static_cast<int>(movable_element_size(ctx, src.dtype()));
  const launch::StridedIndex index = index_of(ctx, copy);
  Tensor& out = device_output(ctx, out_slot, i, src.dtype(), shape);
  if (zero_first && out.bytes() > 0)
    CTP_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, out.bytes(), stream_of(ctx)));
  launch::strided_copy(src.raw_data(), out.raw_data(), bytes, index, stream_of(ctx));
}

void transpose2(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const meta::TransposeMeta m = meta::transpose2(ctx, meta_of(x));
  write_xshape(ctx, x, m.xshape);
  strided(ctx, x, "Out", 0, m.out_shape, transpose_copy(m));
}

void transpose2_grad(KernelContext& ctx) {
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const meta::TransposeMeta m =
      meta::transpose2_grad(ctx, meta_of(ctx.input("XShape")), meta_of(dout));
  if (ctx.has_output("X@GRAD"))
    strided(ctx, dout, "X@GRAD", 0, m.x_shape, reversed(transpose_copy(m)));
}

void slice(KernelContext& ctx) {
  const Tensor input = device_input(ctx, "Input");
  const meta::SliceMeta m = meta::slice(ctx, meta_of(input));
  strided(ctx, input, "Out", 0, m.out_shape, slice_copy(m));
}

void slice_grad(KernelContext& ctx) {
  const Tensor& input = ctx.shape_input("Input");
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const meta::SliceMeta m = meta::slice_grad(ctx, meta_of(input), meta_of(dout));
  if (ctx.has_output("Input@GRAD"))
    strided(ctx, dout, "Input@GRAD", 0, m.input_shape, reversed(slice_copy(m)), true);
}

void stack(KernelContext& ctx) {
  std::vector<Tensor> xs;
  std::vector<TensorMeta> metas;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) xs.push_back(device_input(ctx, "X", i));
  for (const Tensor& x : xs) metas.push_back(meta_of(x));
  const meta::StackMeta m = meta::stack(ctx, metas);
  const int bytes = static_cast<int>(movable_element_size(ctx, xs[0].dtype()));
  Tensor& y = device_output(ctx, "Y", 0, xs[0].dtype(), m.out_shape);
  for (std::size_t i = 0; i < xs.size(); ++i)
    launch::strided_copy(xs[i].raw_data(), y.raw_data(), bytes, index_of(ctx, stack_copy(m, i)),
                         stream_of(ctx));
}

void stack_grad(KernelContext& ctx) {
  const Tensor dy = device_input(ctx, "Y@GRAD");
  const std::size_t count = ctx.output_count("X@GRAD");
  const meta::StackMeta m = meta::stack_grad(ctx, meta_of(dy), count);
  for (std::size_t i = 0; i < count; ++i) {
    if (ctx.output_names("X@GRAD")[i] == "@EMPTY@") continue;  // an input with no gradient
    strided(ctx, dy, "X@GRAD", i, m.x_shape, reversed(stack_copy(m, i)));
  }
}

}  // namespace

CTP_REGISTER_KERNEL(reshape2, CUDA, reshape2);
CTP_REGISTER_KERNEL(shape, CUDA, shape);
CTP_REGISTER_KERNEL(flatten_contiguous_range, CUDA, reinterpret<meta::flatten_contiguous_range>);
CTP_REGISTER_KERNEL(flatten2, CUDA, reinterpret<meta::flatten2>);
CTP_REGISTER_KERNEL(squeeze2, CUDA, reinterpret<meta::squeeze2>);
CTP_REGISTER_KERNEL(unsqueeze2, CUDA, reinterpret<meta::unsqueeze2>);
CTP_REGISTER_KERNEL(reshape2_grad, CUDA, reinterpret_grad);
CTP_REGISTER_KERNEL(flatten_contiguous_range_grad, CUDA, reinterpret_grad);
CTP_REGISTER_KERNEL(flatten2_grad, CUDA, reinterpret_grad);
CTP_REGISTER_KERNEL(squeeze2_grad, CUDA, reinterpret_grad);
CTP_REGISTER_KERNEL(unsqueeze2_grad, CUDA, reinterpret_grad);
CTP_REGISTER_KERNEL(transpose2, CUDA, transpose2);
CTP_REGISTER_KERNEL(transpose2_grad, CUDA, transpose2_grad);
CTP_REGISTER_KERNEL(slice, CUDA, slice);
CTP_REGISTER_KERNEL(slice_grad, CUDA, slice_grad);
CTP_REGISTER_KERNEL(stack, CUDA, stack);
CTP_REGISTER_KERNEL(stack_grad, CUDA, stack_grad);

}  // namespace ctp::cuda
