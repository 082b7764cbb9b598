// CUDA kernels of the simulated-quantization ops under the rules of
// ops/schema/meta_quant.h; the launchers are ops/cuda/quant_device_kernels.h.
#include "ops/common/kernel_util.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/quant_device_kernels.h"
#include "ops/schema/meta_quant.h"

namespace ctp::cuda {
namespace {

launch::Stream stream_of(KernelContext& ctx) { return device_context(ctx).compute_stream(); }

template <bool kDequantize>
void fake_quantize(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor in_scale = device_input(ctx, "InScale");
  const meta::FakeQuantMeta m = meta::fake_quantize(ctx, meta_of(x), meta_of(in_scale));
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), m.shape);
    T* out_scale = ctx.has_output("OutScale")
                       ? device_output(ctx, "OutScale", 0, x.dtype(), {1}).data<T>()
                       : nullptr;
    launch::fake_quantize<T>(x.data<T>(), in_scale.data<T>(), out.data<T>(), out_scale,
                             x.numel(), m.bin_cnt, m.round_type, kDequantize, stream_of(ctx));
  });
}

void fake_dequantize_max_abs(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor scale = device_input(ctx, "Scale");
  const meta::FakeDequantMeta m = meta::fake_dequantize(ctx, meta_of(x), meta_of(scale));
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), m.shape);
    launch::fake_dequantize<T>(x.data<T>(), scale.data<T>(), out.data<T>(), x.numel(),
                               m.max_range, stream_of(ctx));
  });
}

void straight_through_estimator_grad(KernelContext& ctx) {
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const Shape shape = meta::straight_through_grad(ctx, meta_of(dout));
  if (!ctx.has_output("X@GRAD")) return;
  dispatch_float(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    Tensor& dx = device_output(ctx, "X@GRAD", 0, dout.dtype(), shape);
    copy_bytes(dout, dx, device_context(ctx).compute_stream());
  });
}

}  // namespace

CTP_REGISTER_KERNEL(fake_quantize_moving_average_abs_max, CUDA, fake_quantize<false>);
CTP_REGISTER_KERNEL(fake_quantize_dequantize_moving_average_abs_max, CUDA, fake_quantize<true>);
CTP_REGISTER_KERNEL(fake_dequantize_max_abs, CUDA, fake_dequantize_max_abs);
CTP_REGISTER_KERNEL(straight_through_estimator_grad, CUDA, straight_through_estimator_grad);

}  // namespace ctp::cuda
