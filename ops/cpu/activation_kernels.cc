// relu, relu_grad and scale.
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cpu/elementwise_map.h"
#include "ops/cpu/float16_compute.h"
#include "ops/schema/meta_nn.h"

namespace ctp::cpu {
namespace {

void relu(KernelContext& ctx) {
  const Tensor x = ctx.input("X");  // a handle: Out may be X
  map_elements(ctx, "X", x, ctx.output("Out"), x.shape(), [](auto v) {
    using T = decltype(v);
    return v > T(0) ? v : T(0);
  });
}

// Paddle's relu_grad reads Out (relu's output); X serves as well when a
// writer passes that instead, since both are positive in the same places.
void relu_grad(KernelContext& ctx) {
  const Tensor dout = ctx.input("Out@GRAD");
  const Tensor gate = ctx.has_input("Out") ? ctx.input("Out") : ctx.input("X");
  meta::relu_grad(ctx, meta_of(gate), meta_of(dout));
  map_element_pairs(ctx, "Out@GRAD", dout, gate, ctx.output("X@GRAD"), dout.shape(),
                    [](auto g, auto o) {
                      using T = decltype(g);
                      return o > T(0) ? g : T(0);
                    });
}

void scale(KernelContext& ctx) {
  const Tensor x = ctx.input("X");
  const double factor =
      ctx.has_input("ScaleTensor") ? scalar_value(ctx.input("ScaleTensor")) : ctx.float_attr("scale", 1.0);
  const double bias = ctx.float_attr("bias", 0.0);
  const bool bias_after_scale = ctx.bool_attr("bias_after_scale", true);
  Tensor& out = ctx.output("Out");
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    out.resize(x.dtype(), x.shape());
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    const T s = static_cast<T>(factor), b = static_cast<T>(bias);
    const int64_t n = x.numel();
    if (bias_after_scale)
      for (int64_t i = 0; i < n; ++i) op[i] = s * xp[i] + b;
    else
      for (int64_t i = 0; i < n; ++i) op[i] = s * (xp[i] + b);
  });
}

}  // namespace

CTP_REGISTER_KERNEL(relu, CPU, computed_in_float(relu));
CTP_REGISTER_KERNEL(relu_grad, CPU, computed_in_float(relu_grad));
CTP_REGISTER_KERNEL(scale, CPU, computed_in_float(scale, {"ScaleTensor"}));

}  // namespace ctp::cpu
