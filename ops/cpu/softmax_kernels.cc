// softmax and softmax_grad along any axis. The forward pass subtracts each
// row's maximum before exp, so large inputs do not overflow.
#include <algorithm>
#include <cmath>

#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cpu/float16_compute.h"
#include "ops/schema/meta_nn.h"

namespace ctp::cpu {
namespace {

// Out = exp(x - max) / sum(exp(x - max)) over the class axis. Out may be X
// itself: each row is read whole before it is written.
void softmax(KernelContext& ctx) {
  const Tensor x = ctx.input("X");
  const meta::SoftmaxMeta m = meta::softmax(ctx, meta_of(x));
  Tensor& out = ctx.output("Out");
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    out.resize(x.dtype(), x.shape());
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    for (int64_t o = 0; o < m.outer; ++o)
      for (int64_t i = 0; i < m.inner; ++i) {
        const int64_t base = o * m.classes * m.inner + i;
        const auto at = [&](int64_t c) { return base + c * m.inner; };
        T max = xp[at(0)];
        for (int64_t c = 1; c < m.classes; ++c) max = std::max(max, xp[at(c)]);
        T sum = 0;
        for (int64_t c = 0; c < m.classes; ++c) sum += std::exp(xp[at(c)] - max);
        for (int64_t c = 0; c < m.classes; ++c) op[at(c)] = std::exp(xp[at(c)] - max) / sum;
      }
  });
}

// dX = Out * (dOut - sum(dOut * Out)) over the class axis.
void softmax_grad(KernelContext& ctx) {
  const Tensor out = ctx.input("Out");
  const Tensor dout = ctx.input("Out@GRAD");
  const meta::SoftmaxMeta m = meta::softmax_grad(ctx, meta_of(out), meta_of(dout));
  Tensor& dx = ctx.output("X@GRAD");
  dispatch_float(out.dtype(), ctx, "Out", [&]<typename T>() {
    dx.resize(out.dtype(), out.shape());
    const T* y = out.data<T>();
    const T* g = dout.data<T>();
    T* d = dx.data<T>();
    for (int64_t o = 0; o < m.outer; ++o)
      for (int64_t i = 0; i < m.inner; ++i) {
        const int64_t base = o * m.classes * m.inner + i;
        const auto at = [&](int64_t c) { return base + c * m.inner; };
        T dot = 0;
        for (int64_t c = 0; c < m.classes; ++c) dot += g[at(c)] * y[at(c)];
        for (int64_t c = 0; c < m.classes; ++c) d[at(c)] = y[at(c)] * (g[at(c)] - dot);
      }
  });
}

}  // namespace

CTP_REGISTER_KERNEL(softmax, CPU, computed_in_float(softmax));
CTP_REGISTER_KERNEL(softmax_grad, CPU, computed_in_float(softmax_grad));

}  // namespace ctp::cpu
