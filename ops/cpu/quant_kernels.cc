// The simulated-quantization ops on the CPU under the rules of
// ops/schema/meta_quant.h, element by element with the formulas the CUDA
// kernels share (ops/common/quant_math.h).
#include "ops/common/kernel_util.h"
#include "ops/common/quant_math.h"
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/schema/meta_quant.h"

namespace ctp::cpu {
namespace {

// OutScale is InScale unchanged (the inference form keeps its scale); most
// programs name one var for both, which this leaves as it is.
template <typename T>
void write_out_scale(KernelContext& ctx, const Tensor& in_scale) {
  if (!ctx.has_output("OutScale")) return;
  const T value = in_scale.data<T>()[0];
  Tensor& out_scale = ctx.output("OutScale");
  out_scale.resize(in_scale.dtype(), {1});
  out_scale.data<T>()[0] = value;
}

template <bool kDequantize>
void fake_quantize(KernelContext& ctx) {
  const Tensor x = ctx.input("X");  // handles: Out may be X, OutScale InScale
  const Tensor in_scale = ctx.input("InScale");
  const meta::FakeQuantMeta m = meta::fake_quantize(ctx, meta_of(x), meta_of(in_scale));
  Tensor& out = ctx.output("Out");
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    const T scale = in_scale.data<T>()[0];
    const T bins = static_cast<T>(m.bin_cnt);
    out.resize(x.dtype(), m.shape);
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      op[i] = kDequantize ? quant::quantize_dequantize(xp[i], scale, bins, m.round_type)
                          : quant::quantize(xp[i], scale, bins, m.round_type);
    write_out_scale<T>(ctx, in_scale);
  });
}

void fake_dequantize_max_abs(KernelContext& ctx) {
  const Tensor x = ctx.input("X");
  const Tensor scale_tensor = ctx.input("Scale");
  const meta::FakeDequantMeta m = meta::fake_dequantize(ctx, meta_of(x), meta_of(scale_tensor));
  Tensor& out = ctx.output("Out");
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    const T scale = scale_tensor.data<T>()[0];
    const T range = static_cast<T>(m.max_range);
    out.resize(x.dtype(), m.shape);
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) op[i] = quant::dequantize(xp[i], scale, range);
  });
}

void straight_through_estimator_grad(KernelContext& ctx) {
  const Tensor dout = ctx.input("Out@GRAD");
  const Shape shape = meta::straight_through_grad(ctx, meta_of(dout));
  if (!ctx.has_output("X@GRAD")) return;
  Tensor& dx = ctx.output("X@GRAD");
  dispatch_float(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    dx.resize(dout.dtype(), shape);
    const T* g = dout.data<T>();
    T* d = dx.data<T>();
    for (int64_t i = 0, n = dout.numel(); i < n; ++i) d[i] = g[i];
  });
}

}  // namespace

CTP_REGISTER_KERNEL(fake_quantize_moving_average_abs_max, CPU, fake_quantize<false>);
CTP_REGISTER_KERNEL(fake_quantize_dequantize_moving_average_abs_max, CPU, fake_quantize<true>);
CTP_REGISTER_KERNEL(fake_dequantize_max_abs, CPU, fake_dequantize_max_abs);
CTP_REGISTER_KERNEL(straight_through_estimator_grad, CPU, straight_through_estimator_grad);

}  // namespace ctp::cpu
