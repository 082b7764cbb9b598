#include "ops/cuda/cuda_kernel_util.h"

namespace ctp::cuda {

DeviceContext& device_context(KernelContext& ctx) {
  DeviceContext* dc = ctx.services().device_context;
  if (!dc)
    throw ctx.error("this run on " + ctx.services().device.to_string() +
                " has no DeviceContext (RunServices::device_context is null)");
  dc->make_current();
  return *dc;
}

Tensor& device_input(KernelContext& ctx, std::string_view slot, std::size_t i) {
  Tensor& t = ctx.input(slot, i);
  DeviceContext& dc = device_context(ctx);
  if (t.device() == dc.device()) return t;
  if (t.device().kind == DeviceKind::CUDA)
    throw ctx.error("input " + std::string(slot) + "='" + ctx.input_names(slot)[i] +
                "' is on " + t.device().to_string() + ", but this run is on " +
                dc.device().to_string());
  t = dc.to_device(t);
  return t;
}

Tensor& device_output(KernelContext& ctx, std::string_view slot, std::size_t i, DataType dtype,
                      std::vector<int64_t> shape) {
  DeviceContext& dc = device_context(ctx);
  Tensor& out = ctx.output(slot, i);
  if (out.initialized() && out.dtype() == dtype && out.shape() == shape &&
      out.device() == dc.device())
    return out;
  // Not zero-filled: the kernel writes every element of its output.
  const std::size_t bytes = tensor_byte_count(dtype, shape);
  out = Tensor::view(allocate_uninitialized_buffer(dc.device(), bytes), 0, dtype,
                     std::move(shape));
  return out;
}

}  // namespace ctp::cuda
