// elementwise_add/sub/mul/div with Paddle's `axis` broadcasting, and their
// gradients, which sum the output gradient over the dims an input was
// broadcast along (in runs: RunSums).
#include <algorithm>

#include "ops/common/broadcast.h"
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cpu/float16_compute.h"
#include "ops/cpu/run_sums.h"
#include "ops/schema/meta_math.h"

namespace ctp::cpu {
namespace {

enum class Binary { Add, Sub, Mul, Div };

template <Binary kOp>
void elementwise(KernelContext& ctx) {
  // Handles, not references: if Out is X or Y and must grow, resizing it
  // must not free the memory still being read.
  const Tensor x = ctx.input("X");
  const Tensor y = ctx.input("Y");
  const BroadcastPlan plan = plan_broadcast(meta::elementwise(ctx, meta_of(x), meta_of(y)));
  Tensor& out = ctx.output("Out");
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    // When Out is X or Y in place, each element is read before it is written.
    out.resize(x.dtype(), plan.out_shape);
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* op = out.data<T>();
    for_each_broadcast(plan, [&](int64_t o, int64_t i, int64_t j) {
      if constexpr (kOp == Binary::Add) op[o] = xp[i] + yp[j];
      else if constexpr (kOp == Binary::Sub) op[o] = xp[i] - yp[j];
      else if constexpr (kOp == Binary::Mul) op[o] = xp[i] * yp[j];
      else op[o] = xp[i] / yp[j];
    });
  });
}

template <Binary kOp>
void elementwise_grad(KernelContext& ctx) {
  const Tensor& dout = ctx.input("Out@GRAD");
  // add/sub gradients need only the shapes of X and Y, div's only X's (the
  // schema declares them shape-only); Paddle still passes both.
  constexpr bool kReadsX = kOp == Binary::Mul, kReadsY = kOp == Binary::Mul || kOp == Binary::Div;
  const Tensor& x = kReadsX ? ctx.input("X") : ctx.shape_input("X");
  const Tensor& y = kReadsY ? ctx.input("Y") : ctx.shape_input("Y");
  // div's Y gradient reads Out too (-dOut * Out / Y, as Paddle's).
  const Tensor* out = kOp == Binary::Div ? &ctx.input("Out") : nullptr;
  const BroadcastPlan plan = plan_broadcast(
      kOp == Binary::Div
          ? meta::elementwise_div_grad(ctx, meta_of(x), meta_of(y), meta_of(*out), meta_of(dout))
          : meta::elementwise_grad(ctx, meta_of(x), meta_of(y), meta_of(dout)));
  const int64_t out_count = dout.numel();
  dispatch_float(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    const T* g = dout.data<T>();
    const T* xp = kReadsX ? x.data<T>() : nullptr;
    const T* yp = kReadsY ? y.data<T>() : nullptr;
    const T* outp = out ? out->data<T>() : nullptr;
    if (ctx.has_output("X@GRAD")) {
      Tensor& dx = ctx.output("X@GRAD");
      dx.resize(dout.dtype(), x.shape());
      fill(dx, 0.0);
      RunSums<T> d(dx.data<T>(), dx.numel(), out_count / std::max<int64_t>(dx.numel(), 1));
      for_each_broadcast(plan, [&](int64_t o, int64_t i, int64_t j) {
        if constexpr (kOp == Binary::Mul) d.add(i, g[o] * yp[j]);
        else if constexpr (kOp == Binary::Div) d.add(i, g[o] / yp[j]);
        else d.add(i, g[o]);
      });
    }
    if (ctx.has_output("Y@GRAD")) {
      Tensor& dy = ctx.output("Y@GRAD");
      dy.resize(dout.dtype(), y.shape());
      fill(dy, 0.0);
      RunSums<T> d(dy.data<T>(), dy.numel(), out_count / std::max<int64_t>(dy.numel(), 1));
      for_each_broadcast(plan, [&](int64_t o, int64_t i, int64_t j) {
        if constexpr (kOp == Binary::Mul) d.add(j, g[o] * xp[i]);
        else if constexpr (kOp == Binary::Div) d.add(j, -g[o] * outp[o] / yp[j]);
        else if constexpr (kOp == Binary::Sub) d.add(j, -g[o]);
        else d.add(j, g[o]);
      });
    }
  });
}

}  // namespace

CTP_REGISTER_KERNEL(elementwise_add, CPU, computed_in_float(elementwise<Binary::Add>));
CTP_REGISTER_KERNEL(elementwise_sub, CPU, computed_in_float(elementwise<Binary::Sub>));
CTP_REGISTER_KERNEL(elementwise_mul, CPU, computed_in_float(elementwise<Binary::Mul>));
CTP_REGISTER_KERNEL(elementwise_div, CPU, computed_in_float(elementwise<Binary::Div>));
CTP_REGISTER_KERNEL(elementwise_add_grad, CPU, computed_in_float(elementwise_grad<Binary::Add>));
CTP_REGISTER_KERNEL(elementwise_sub_grad, CPU, computed_in_float(elementwise_grad<Binary::Sub>));
CTP_REGISTER_KERNEL(elementwise_mul_grad, CPU, computed_in_float(elementwise_grad<Binary::Mul>));
CTP_REGISTER_KERNEL(elementwise_div_grad, CPU, computed_in_float(elementwise_grad<Binary::Div>));

}  // namespace ctp::cpu
