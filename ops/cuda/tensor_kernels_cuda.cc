// CUDA kernels that move bytes: split, concat (strided device copies) and
// coalesce_tensor, which lays gradients out as 256-byte aligned views into
// one device buffer so that a fused all-reduce needs no copy per step.
#include "executor/cuda/cuda_check.h"
#include "executor/runtime/float16.h"
#include "ops/common/coalesce.h"
#include "ops/common/kernel_util.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/device_kernels.h"
#include "ops/schema/meta_tensor.h"
#include "ops/schema/shape_rules.h"

namespace ctp::cuda {
namespace {

// The axis: AxisTensor's value when the op has one, else the attribute.
int64_t axis_value(KernelContext& ctx) {
  if (!ctx.has_input("AxisTensor")) return ctx.int_attr("axis");
  return static_cast<int64_t>(scalar_value(device_context(ctx).to_host(ctx.input("AxisTensor"))));
}

// `rows` rows of `width` bytes, from a source with pitch `src_pitch` to a
// destination with pitch `dst_pitch`, on the compute stream.
void copy_rows(KernelContext& ctx, void* dst, std::size_t dst_pitch, const void* src,
               std::size_t src_pitch, std::size_t width, int64_t rows) {
  if (width == 0 || rows == 0) return;
  CTP_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width,
                                   static_cast<std::size_t>(rows), cudaMemcpyDeviceToDevice,
                                   device_context(ctx).compute_stream()));
}

void split(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const auto& shape = x.shape();
  const meta::SplitMeta m = meta::split(ctx, meta_of(x), axis_value(ctx));
  const std::size_t axis = m.axis, outputs = m.sizes.size();
  const std::vector<int64_t>& sizes = m.sizes;
  const int64_t outer = product(shape, 0, axis);
  const std::size_t row_bytes =
      static_cast<std::size_t>(product(shape, axis + 1, shape.size())) * element_size(x.dtype());
  const std::size_t x_stride = row_bytes * static_cast<std::size_t>(shape[axis]);
  const char* src = static_cast<const char*>(x.raw_data());
  std::size_t start = 0;
  for (std::size_t k = 0; k < outputs; ++k) {
    std::vector<int64_t> piece_shape = shape;
    piece_shape[axis] = sizes[k];
    Tensor& out = device_output(ctx, "Out", k, x.dtype(), piece_shape);
    const std::size_t piece = row_bytes * static_cast<std::size_t>(sizes[k]);
    if (piece) copy_rows(ctx, out.raw_data(), piece, src + start, x_stride, piece, outer);
    start += piece;
  }
}

void concat(KernelContext& ctx) {
  std::vector<Tensor> inputs;
  std::vector<TensorMeta> metas;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i)
    inputs.push_back(device_input(ctx, "X", i));
  for (const Tensor& t : inputs) metas.push_back(meta_of(t));
  const meta::ConcatMeta m = meta::concat(ctx, metas, axis_value(ctx));
  const std::size_t axis = m.axis;
  const std::vector<int64_t>& out_shape = m.out_shape;
  const std::vector<int64_t>& first = inputs[0].shape();
  Tensor& out = device_output(ctx, "Out", 0, inputs[0].dtype(), out_shape);
  const int64_t outer = product(first, 0, axis);
  const std::size_t row_bytes = static_cast<std::size_t>(product(first, axis + 1, first.size())) *
                                element_size(inputs[0].dtype());
  const std::size_t out_stride = row_bytes * static_cast<std::size_t>(out_shape[axis]);
  char* dst = static_cast<char*>(out.raw_data());
  std::size_t start = 0;
  for (const Tensor& t : inputs) {
    const std::size_t piece = row_bytes * static_cast<std::size_t>(t.shape()[axis]);
    if (piece) copy_rows(ctx, dst + start, out_stride, t.raw_data(), piece, piece, outer);
    start += piece;
  }
}

void fill_device(KernelContext& ctx, Tensor& t, double value) {
  launch::Stream s = device_context(ctx).compute_stream();
  switch (t.dtype()) {
    case DataType::FP32: launch::fill<float>(t.data<float>(), t.numel(), value, s); return;
    case DataType::FP64: launch::fill<double>(t.data<double>(), t.numel(), value, s); return;
    case DataType::INT32: launch::fill<int32_t>(t.data<int32_t>(), t.numel(), value, s); return;
    case DataType::INT64: launch::fill<int64_t>(t.data<int64_t>(), t.numel(), value, s); return;
    case DataType::FP16: case DataType::BF16: {
      const float v = static_cast<float>(value);  // rounded as the CPU kernel rounds it
      launch::fill_bits16(t.data<uint16_t>(), t.numel(),
                          t.dtype() == DataType::FP16 ? float16::from_float(v)
                                                      : bfloat16::from_float(v), s);
      return;
    }
    default:
      if (value != 0.0)
        ctx.fail("set_constant " + std::to_string(value) + " on dtype " +
                 std::string(to_string(t.dtype())) + " is not supported on the GPU");
      CTP_CUDA_CHECK(cudaMemsetAsync(t.raw_data(), 0, t.bytes(), s));
  }
}

// As the CPU kernel (ops/cpu/coalesce_tensor_kernel.cc), on the run's GPU.
void coalesce_tensor(KernelContext& ctx) {
  DeviceContext& dc = device_context(ctx);
  const CoalescePlan plan = plan_coalesce(ctx, meta::kGpuChunkAlignment);
  const DataType dtype = plan.layout.dtype;
  Tensor& fused = ctx.output("FusedOutput");
  RunCounters& counters = ctx.services().counters;
  const auto copy_in = [&](std::size_t i, Tensor& target) {
    Tensor& in = device_input(ctx, "Input", i);
    if (in.raw_data() == target.raw_data()) return;  // produced in place already
    copy_bytes(in, target, dc.compute_stream());
    counters.coalesce_bytes_copied += in.bytes();
  };
  if (!layout_is_current(ctx, plan, dc.device())) {
    ++counters.coalesce_layouts;
    Tensor fresh(dtype, plan.fused_shape, dc.device());
    for (std::size_t i = 0; i < plan.shapes.size(); ++i) {
      Tensor view = Tensor::view(fresh.buffer(), fresh.offset() + plan.layout.offset_bytes[i],
                                 dtype, plan.shapes[i]);
      if (plan.copy_data) copy_in(i, view);
      ctx.output("Output", i) = std::move(view);
    }
    fused = std::move(fresh);
  } else if (plan.copy_data) {
    for (std::size_t i = 0; i < plan.shapes.size(); ++i) copy_in(i, ctx.output("Output", i));
  }
  if (plan.set_constant) fill_device(ctx, fused, plan.constant);
}

}  // namespace

CTP_REGISTER_KERNEL(split, CUDA, split);
CTP_REGISTER_KERNEL(concat, CUDA, concat);
CTP_REGISTER_KERNEL(coalesce_tensor, CUDA, coalesce_tensor);

}  // namespace ctp::cuda
