// dropout and dropout_grad: the mask from the counter-based draws the CUDA
// kernels share (ops/common/dropout_mask.h), so one seed gives one mask on
// every device. FP32 and FP64; FP16/BF16 computed in float.
#include <optional>

#include "ops/common/activation_inputs.h"
#include "ops/common/dropout_mask.h"
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cpu/float16_compute.h"
#include "ops/schema/meta_activation.h"

namespace ctp::cpu {
namespace {

// Out = X times dropout's inference scale (is_test), or the gradient of that.
template <typename T>
void scale_for_test(const T* in, T* out, int64_t n, const meta::DropoutMeta& m) {
  const T factor = static_cast<T>(ctp::dropout::scales(m.prob, m.upscale_in_train).test_scale);
  for (int64_t i = 0; i < n; ++i) out[i] = in[i] * factor;
}

void dropout(KernelContext& ctx) {
  const Tensor x = ctx.input("X");
  const Tensor* seed = ctx.has_input("Seed") ? &ctx.input("Seed") : nullptr;
  std::optional<TensorMeta> seed_meta;
  if (seed) seed_meta.emplace(meta_of(*seed));
  const meta::DropoutMeta m = meta::dropout(ctx, meta_of(x), seed_meta ? &*seed_meta : nullptr);
  Tensor& out = ctx.output("Out");
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    out.resize(x.dtype(), m.shape);
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    const int64_t n = x.numel();
    // Inference writes no mask (Paddle's infers none either).
    if (m.is_test) return scale_for_test(xp, op, n, m);
    uint8_t* mask = nullptr;
    if (ctx.has_output("Mask")) {
      Tensor& mask_tensor = ctx.output("Mask");
      mask_tensor.resize(DataType::UINT8, m.shape);
      mask = mask_tensor.data<uint8_t>();
    }
    const uint64_t key = dropout_seed(m, seed);
    const ctp::dropout::Scales scales = ctp::dropout::scales(m.prob, m.upscale_in_train);
    for (int64_t i = 0; i < n; ++i) {
      const bool kept = ctp::dropout::keep(key, i, m.prob);
      if (mask) mask[i] = kept ? 1 : 0;
      op[i] = ctp::dropout::train_value(xp[i], kept, scales);
    }
  });
}

void dropout_grad(KernelContext& ctx) {
  const Tensor& mask = ctx.input("Mask");
  const Tensor& dout = ctx.input("Out@GRAD");
  const meta::DropoutMeta m = meta::dropout_grad(ctx, meta_of(mask), meta_of(dout));
  Tensor& dx = ctx.output("X@GRAD");
  dispatch_float(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    dx.resize(dout.dtype(), m.shape);
    const T* g = dout.data<T>();
    T* d = dx.data<T>();
    const int64_t n = dout.numel();
    if (m.is_test) return scale_for_test(g, d, n, m);
    const uint8_t* keep = mask.data<uint8_t>();
    const ctp::dropout::Scales scales = ctp::dropout::scales(m.prob, m.upscale_in_train);
    for (int64_t i = 0; i < n; ++i) d[i] = ctp::dropout::train_value(g[i], keep[i] != 0, scales);
  });
}

}  // namespace

CTP_REGISTER_KERNEL(dropout, CPU, computed_in_float(dropout));
CTP_REGISTER_KERNEL(dropout_grad, CPU, computed_in_float(dropout_grad));

}  // namespace ctp::cpu
