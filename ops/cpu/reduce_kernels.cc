// Reductions: mean, reduce_mean and reduce_sum (by dim, keep_dim, reduce_all), their
// gradients, and sum (the n-ary add that accumulates gradients).
#include <cstring>

#include "ops/common/broadcast.h"
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cpu/float16_compute.h"
#include "ops/cpu/run_sums.h"
#include "ops/schema/meta_math.h"

namespace ctp::cpu {
namespace {

void mean(KernelContext& ctx) {
  const Tensor& x = ctx.input("X");
  Tensor& out = ctx.output("Out");
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    const T* xp = x.data<T>();
    const int64_t n = x.numel();
    T total = 0;
    for (int64_t i = 0; i < n; ++i) total += xp[i];
    out.resize(x.dtype(), {1});
    out.data<T>()[0] = n ? total / static_cast<T>(n) : T(0);
  });
}

void mean_grad(KernelContext& ctx) {
  const Tensor& x = ctx.shape_input("X");
  const Tensor& dout = ctx.input("Out@GRAD");
  meta::mean_grad(ctx, meta_of(dout));
  Tensor& dx = ctx.output("X@GRAD");
  dispatch_float(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    dx.resize(dout.dtype(), x.shape());
    const int64_t n = x.numel();
    const T value = dout.data<T>()[0] / static_cast<T>(n ? n : 1);
    T* d = dx.data<T>();
    for (int64_t i = 0; i < n; ++i) d[i] = value;
  });
}

// reduce_mean (kMean) and reduce_sum: one walk, the mean scaled by 1/count.
template <bool kMean>
void reduce(KernelContext& ctx) {
  const Tensor& x = ctx.input("X");
  const Reduction r = plan_reduction(
      kMean ? meta::reduce_mean(ctx, meta_of(x)) : meta::reduce_sum(ctx, meta_of(x)), x.shape());
  Tensor& out = ctx.output("Out");
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    out.resize(x.dtype(), r.out_shape);
    fill(out, 0.0);
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    {
      RunSums<T> sums(op, out.numel(), r.count);
      for_each_broadcast(r.plan, [&](int64_t, int64_t i, int64_t o) { sums.add(o, xp[i]); });
    }
    if (!kMean) return;
    const T inv = T(1) / static_cast<T>(r.count ? r.count : 1);
    for (int64_t o = 0, n = out.numel(); o < n; ++o) op[o] *= inv;
  });
}

template <bool kMean>
void reduce_grad(KernelContext& ctx) {
  const Tensor& x = ctx.shape_input("X");
  const Tensor& dout = ctx.input("Out@GRAD");
  const Reduction r = plan_reduction(kMean ? meta::reduce_mean_grad(ctx, meta_of(x), meta_of(dout))
                                           : meta::reduce_sum_grad(ctx, meta_of(x), meta_of(dout)),
                                     x.shape());
  Tensor& dx = ctx.output("X@GRAD");
  dispatch_float(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    dx.resize(dout.dtype(), x.shape());
    const T* g = dout.data<T>();
    T* d = dx.data<T>();
    const T factor = kMean ? T(1) / static_cast<T>(r.count ? r.count : 1) : T(1);
    for_each_broadcast(r.plan, [&](int64_t, int64_t i, int64_t o) { d[i] = g[o] * factor; });
  });
}

void sum(KernelContext& ctx) {
  const std::size_t n = ctx.input_count("X");
  std::vector<Tensor> inputs;  // handles: Out is often X[0] (in-place accumulation)
  std::vector<TensorMeta> metas;
  for (std::size_t i = 0; i < n; ++i) inputs.push_back(ctx.input("X", i));
  for (const Tensor& t : inputs) metas.push_back(meta_of(t));
  meta::sum(ctx, metas);
  Tensor& out = ctx.output("Out");
  dispatch_float(inputs[0].dtype(), ctx, "X", [&]<typename T>() {
    out.resize(inputs[0].dtype(), inputs[0].shape());
    T* op = out.data<T>();
    const int64_t count = out.numel();
    // Out is often one of the inputs: its old value counts once per time it
    // is listed, and every element is read before it is written.
    T out_copies = 0;
    std::vector<const T*> others;
    for (const Tensor& t : inputs) {
      if (t.raw_data() == out.raw_data()) out_copies += T(1);
      else others.push_back(t.data<T>());
    }
    for (int64_t e = 0; e < count; ++e) {
      T acc = out_copies == T(0) ? T(0) : out_copies * op[e];
      for (const T* p : others) acc += p[e];
      op[e] = acc;
    }
  });
}

}  // namespace

CTP_REGISTER_KERNEL(mean, CPU, computed_in_float(mean));
CTP_REGISTER_KERNEL(mean_grad, CPU, computed_in_float(mean_grad));
CTP_REGISTER_KERNEL(reduce_mean, CPU, computed_in_float(reduce<true>));
CTP_REGISTER_KERNEL(reduce_mean_grad, CPU, computed_in_float(reduce_grad<true>));
CTP_REGISTER_KERNEL(reduce_sum, CPU, computed_in_float(reduce<false>));
CTP_REGISTER_KERNEL(reduce_sum_grad, CPU, computed_in_float(reduce_grad<false>));
CTP_REGISTER_KERNEL(sum, CPU, computed_in_float(sum));

}  // namespace ctp::cpu
