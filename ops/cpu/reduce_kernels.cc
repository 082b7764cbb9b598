// Reductions: mean, reduce_mean (by dim, keep_dim, reduce_all), their
// gradients, and sum (the n-ary add that accumulates gradients).
#include <cstring>

#include "ops/cpu/broadcast.h"
#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cpu/float16_compute.h"

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
  const Tensor& x = ctx.input("X");
  const Tensor& dout = ctx.input("Out@GRAD");
  if (dout.numel() != 1)
    throw Error(ctx.where() + "Out@GRAD must have one element, has shape " +
                shape_string(dout.shape()));
  Tensor& dx = ctx.output("X@GRAD");
  dispatch_float(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    dx.resize(dout.dtype(), x.shape());
    const int64_t n = x.numel();
    const T value = dout.data<T>()[0] / static_cast<T>(n ? n : 1);
    T* d = dx.data<T>();
    for (int64_t i = 0; i < n; ++i) d[i] = value;
  });
}

// Maps every element of X to its element of the reduced output: a broadcast
// plan over X's shape whose Y strides are the output's, 0 on reduced dims.
struct Reduction {
  BroadcastPlan plan;
  std::vector<int64_t> out_shape;
  int64_t count = 1;  // elements of X per output element
};

Reduction plan_reduction(KernelContext& ctx, const std::vector<int64_t>& shape) {
  std::vector<bool> reduced(shape.size(), false);
  const std::vector<int64_t> dims = ctx.attr_ints("dim", {0});
  const bool all = ctx.attr_bool("reduce_all", false) || dims.empty();
  for (int64_t d : dims)
    if (!all) reduced[static_cast<std::size_t>(normalize_axis(ctx, d, shape.size(), "dim"))] = true;
  if (all) reduced.assign(shape.size(), true);
  const bool keep = ctx.attr_bool("keep_dim", false);

  Reduction r;
  r.plan.out_shape = shape;
  r.plan.x_strides.assign(shape.size(), 0);
  r.plan.y_strides.assign(shape.size(), 0);
  int64_t x_stride = 1, out_stride = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    r.plan.x_strides[d] = x_stride;
    x_stride *= shape[d];
    if (reduced[d]) {
      r.count *= shape[d];
    } else {
      r.plan.y_strides[d] = out_stride;
      out_stride *= shape[d];
    }
  }
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) r.out_shape.push_back(shape[d]);
    else if (keep) r.out_shape.push_back(1);
  }
  if (r.out_shape.empty()) r.out_shape = {1};  // a full reduction without keep_dim
  return r;
}

void reduce_mean(KernelContext& ctx) {
  const Tensor& x = ctx.input("X");
  const Reduction r = plan_reduction(ctx, x.shape());
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
    const T inv = T(1) / static_cast<T>(r.count ? r.count : 1);
    for (int64_t o = 0, n = out.numel(); o < n; ++o) op[o] *= inv;
  });
}

void reduce_mean_grad(KernelContext& ctx) {
  const Tensor& x = ctx.input("X");
  const Tensor& dout = ctx.input("Out@GRAD");
  const Reduction r = plan_reduction(ctx, x.shape());
  if (dout.numel() != product(r.out_shape))
    throw Error(ctx.where() + "Out@GRAD has shape " + shape_string(dout.shape()) +
                ", expected " + shape_string(r.out_shape));
  Tensor& dx = ctx.output("X@GRAD");
  dispatch_float(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    dx.resize(dout.dtype(), x.shape());
    const T* g = dout.data<T>();
    T* d = dx.data<T>();
    const T inv = T(1) / static_cast<T>(r.count ? r.count : 1);
    for_each_broadcast(r.plan, [&](int64_t, int64_t i, int64_t o) { d[i] = g[o] * inv; });
  });
}

void sum(KernelContext& ctx) {
  const std::size_t n = ctx.input_names("X").size();
  if (n == 0) throw Error(ctx.where() + "X has no inputs");
  std::vector<Tensor> inputs;  // handles: Out is often X[0] (in-place accumulation)
  for (std::size_t i = 0; i < n; ++i) inputs.push_back(ctx.input("X", i));
  for (const Tensor& t : inputs)
    if (t.shape() != inputs[0].shape() || t.dtype() != inputs[0].dtype())
      throw Error(ctx.where() + "inputs differ: " + shape_string(inputs[0].shape()) + " " +
                  std::string(to_string(inputs[0].dtype())) + " vs " + shape_string(t.shape()) +
                  " " + std::string(to_string(t.dtype())));
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
CTP_REGISTER_KERNEL(reduce_mean, CPU, computed_in_float(reduce_mean));
CTP_REGISTER_KERNEL(reduce_mean_grad, CPU, computed_in_float(reduce_mean_grad));
CTP_REGISTER_KERNEL(sum, CPU, computed_in_float(sum));

}  // namespace ctp::cpu
