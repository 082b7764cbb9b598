// CUDA kernels of the element-wise and reduction ops: elementwise_add/sub/mul/div
// (Paddle's axis broadcasting) and their gradients, relu, relu_grad, scale,
// sum, mean and mean_grad, reduce_mean, reduce_sum and their gradients. FP32, FP64, FP16 and
// BF16 (16-bit ones computed in float), queued on the compute stream.
#include <algorithm>
#include <bit>
#include <tuple>

#include "ops/common/broadcast.h"
#include "ops/common/kernel_util.h"
#include "ops/cuda/activation_launch.h"
#include "ops/cuda/batch_launch.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/device_kernels.h"
#include "ops/schema/meta_math.h"
#include "ops/schema/meta_nn.h"
#include "ops/schema/shape_rules.h"

namespace ctp::cuda {
namespace {

using launch::Binary;

launch::Stream stream_of(KernelContext& ctx) { return device_context(ctx).compute_stream(); }

launch::BroadcastIndex index_of(KernelContext& ctx, const BroadcastPlan& plan) {
  launch::BroadcastIndex index;
  const std::size_t rank = plan.out_shape.size();
  if (rank > static_cast<std::size_t>(launch::kMaxDims))
    ctx.fail("the GPU kernel broadcasts at most " + std::to_string(launch::kMaxDims) +
             " dims, the output " + shape_to_string(plan.out_shape) + " has " +
             std::to_string(rank));
  index.rank = static_cast<int>(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    index.out_shape[d] = plan.out_shape[d];
    index.x_strides[d] = plan.x_strides[d];
    index.y_strides[d] = plan.y_strides[d];
  }
  return index;
}

// The device memory binary_grad sums long columns through (null when it needs none).
template <typename T>
void* grad_workspace(KernelContext& ctx, Binary op, bool for_y, int64_t n_d,
                     const launch::BroadcastIndex& index) {
  const std::size_t bytes = launch::binary_grad_workspace<T>(op, for_y, n_d, index);
  return bytes ? device_context(ctx).compute_workspace(bytes) : nullptr;
}

template <Binary kOp>
void elementwise(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor y = device_input(ctx, "Y");
  const BroadcastPlan plan = plan_broadcast(meta::elementwise(ctx, meta_of(x), meta_of(y)));
  const launch::BroadcastIndex index = index_of(ctx, plan);
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), plan.out_shape);
    launch::binary<T>(kOp, x.data<T>(), y.data<T>(), out.data<T>(), index, stream_of(ctx));
  });
}

template <Binary kOp>
void elementwise_grad(KernelContext& ctx) {
  const Tensor dout = device_input(ctx, "Out@GRAD");
  // add's and sub's gradients read only the shapes of X and Y (shape-only
  // in their schemas), mul's both operands.
  constexpr bool kReadsOperands = kOp == Binary::Mul;
  const Tensor x = kReadsOperands ? device_input(ctx, "X") : ctx.shape_input("X");
  const Tensor y = kReadsOperands ? device_input(ctx, "Y") : ctx.shape_input("Y");
  const BroadcastPlan plan =
      plan_broadcast(meta::elementwise_grad(ctx, meta_of(x), meta_of(y), meta_of(dout)));
  const launch::BroadcastIndex index = index_of(ctx, plan);
  dispatch_mixed(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    if (kOp != Binary::Mul && ctx.has_output("X@GRAD") && ctx.has_output("Y@GRAD")) {
      // A bias's layer: X's gradient is dout, Y's its column sums; one pass.
      Tensor& dx = device_output(ctx, "X@GRAD", 0, dout.dtype(), x.shape());
      Tensor& dy = device_output(ctx, "Y@GRAD", 0, dout.dtype(), y.shape());
      if (launch::add_grads_in_one_pass<T>(kOp, dout.data<T>(), dx.data<T>(), dy.data<T>(),
                                           dy.numel(), index, stream_of(ctx),
                                           grad_workspace<T>(ctx, kOp, true, dy.numel(), index)))
        return;
    }
    if (ctx.has_output("X@GRAD")) {
      Tensor& dx = device_output(ctx, "X@GRAD", 0, dout.dtype(), x.shape());
      launch::binary_grad<T>(kOp, false, dout.data<T>(), kReadsOperands ? y.data<T>() : nullptr,
                             dx.data<T>(), dx.numel(),
                             index, stream_of(ctx),
                             grad_workspace<T>(ctx, kOp, false, dx.numel(), index));
    }
    if (ctx.has_output("Y@GRAD")) {
      Tensor& dy = device_output(ctx, "Y@GRAD", 0, dout.dtype(), y.shape());
      launch::binary_grad<T>(kOp, true, dout.data<T>(), kReadsOperands ? x.data<T>() : nullptr,
                             dy.data<T>(), dy.numel(),
                             index, stream_of(ctx),
                             grad_workspace<T>(ctx, kOp, true, dy.numel(), index));
    }
  });
}

// dX = sum of dOut / Y, dY = sum of -dOut * Out / Y over the broadcast dims:
// the terms over the output first (div_grad_terms), then Add's sums, which
// keep the CPU's order.
void elementwise_div_grad(KernelContext& ctx) {
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const Tensor& x = ctx.shape_input("X");  // shape-only: dX and dY read no element of X
  const Tensor y = device_input(ctx, "Y");
  const Tensor out = device_input(ctx, "Out");
  const BroadcastPlan plan = plan_broadcast(
      meta::elementwise_div_grad(ctx, meta_of(x), meta_of(y), meta_of(out), meta_of(dout)));
  const launch::BroadcastIndex index = index_of(ctx, plan);
  const bool want_x = ctx.has_output("X@GRAD"), want_y = ctx.has_output("Y@GRAD");
  dispatch_mixed(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    // One workspace: the two term arrays (256-byte aligned), then what the
    // sums need, used one after the other on the compute stream.
    const std::size_t term_bytes =
        (static_cast<std::size_t>(dout.numel()) * sizeof(T) + 255) / 256 * 256;
    std::size_t sum_bytes = 0;
    for (const bool for_y : {false, true}) {
      const int64_t n = for_y ? y.numel() : x.numel();
      sum_bytes = std::max(sum_bytes, launch::binary_grad_workspace<T>(Binary::Add, for_y, n, index));
    }
    auto* base =
        static_cast<char*>(device_context(ctx).compute_workspace(2 * term_bytes + sum_bytes));
    T* x_terms = want_x ? reinterpret_cast<T*>(base) : nullptr;
    T* y_terms = want_y ? reinterpret_cast<T*>(base + term_bytes) : nullptr;
    void* sum_workspace = sum_bytes ? base + 2 * term_bytes : nullptr;
    launch::div_grad_terms<T>(dout.data<T>(), out.data<T>(), y.data<T>(), x_terms, y_terms, index,
                              stream_of(ctx));
    for (const bool for_y : {false, true}) {
      T* terms = for_y ? y_terms : x_terms;
      if (!terms) continue;
      Tensor& d = device_output(ctx, for_y ? "Y@GRAD" : "X@GRAD", 0, dout.dtype(),
                                for_y ? y.shape() : x.shape());
      launch::binary_grad<T>(Binary::Add, for_y, terms, nullptr, d.data<T>(), d.numel(), index,
                             stream_of(ctx), sum_workspace);
    }
  });
}

void relu(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), x.shape());
    launch::relu<T>(x.data<T>(), out.data<T>(), x.numel(), stream_of(ctx));
  });
}

void relu_grad(KernelContext& ctx) {
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const Tensor gate = ctx.has_input("Out") ? device_input(ctx, "Out") : device_input(ctx, "X");
  meta::relu_grad(ctx, meta_of(gate), meta_of(dout));
  dispatch_mixed(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    Tensor& dx = device_output(ctx, "X@GRAD", 0, dout.dtype(), dout.shape());
    launch::relu_grad<T>(dout.data<T>(), gate.data<T>(), dx.data<T>(), dout.numel(),
                         stream_of(ctx));
  });
}

// Scales of one dtype, factor, bias and order share a launch (the doubles
// by their bits, which order even NaNs).
using ScaleKey = std::tuple<DataType, uint64_t, uint64_t, bool>;

BatchedTask<ScaleKey> prepare_scale(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  double factor = ctx.float_attr("scale", 1.0);
  if (ctx.has_input("ScaleTensor")) {
    // A host read: ScaleTensor is rare (dynamic loss scaling).
    factor = scalar_value(device_context(ctx).to_host(ctx.input("ScaleTensor")));
  }
  const double bias = ctx.float_attr("bias", 0.0);
  const bool bias_after_scale = ctx.bool_attr("bias_after_scale", true);
  BatchedTask<ScaleKey> work{{x.dtype(), std::bit_cast<uint64_t>(factor),
                              std::bit_cast<uint64_t>(bias), bias_after_scale}, {}};
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), x.shape());
    work.task = {x.data<T>(), nullptr, out.data<T>(), x.numel()};
    work.bytes.reads(x.raw_data(), x.bytes()).writes(out.raw_data(), out.bytes());
  });
  return work;
}

void launch_scale(KernelContext& ctx, const ScaleKey& key, const launch::TensorTask* tasks,
                  std::size_t count) {
  const auto factor = std::bit_cast<double>(std::get<1>(key));
  const auto bias = std::bit_cast<double>(std::get<2>(key));
  const bool bias_after_scale = std::get<3>(key);
  dispatch_mixed(std::get<0>(key), ctx, "X", [&]<typename T>() {
    if (count == 1)
      launch::scale<T>(static_cast<const T*>(tasks->a), static_cast<T*>(tasks->out), tasks->n,
                       factor, bias, bias_after_scale, stream_of(ctx));
    else
      launch::multi_scale<T>(tasks, count, factor, bias, bias_after_scale, stream_of(ctx));
  });
}



void sum(KernelContext& ctx) {
  const std::size_t n = ctx.input_count("X");
  if (n > 64) ctx.fail("the GPU kernel adds at most 64 inputs, got " + std::to_string(n));
  std::vector<Tensor> inputs;  // handles: Out is often X[0]
  std::vector<TensorMeta> metas;
  for (std::size_t i = 0; i < n; ++i) inputs.push_back(device_input(ctx, "X", i));
  for (const Tensor& t : inputs) metas.push_back(meta_of(t));
  meta::sum(ctx, metas);
  dispatch_mixed(inputs[0].dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, inputs[0].dtype(), inputs[0].shape());
    std::vector<const T*> pointers;
    for (const Tensor& t : inputs) pointers.push_back(t.data<T>());
    launch::sum<T>(pointers.data(), static_cast<int>(n), out.data<T>(), out.numel(),
                   stream_of(ctx));
  });
}

void mean(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), {1});
    launch::mean<T>(x.data<T>(), out.data<T>(), x.numel(), stream_of(ctx));
  });
}

void mean_grad(KernelContext& ctx) {
  const Tensor& x = ctx.shape_input("X");
  const Tensor dout = device_input(ctx, "Out@GRAD");
  meta::mean_grad(ctx, meta_of(dout));
  const std::vector<int64_t> shape = x.shape();
  dispatch_mixed(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    Tensor& dx = device_output(ctx, "X@GRAD", 0, dout.dtype(), shape);
    launch::mean_grad<T>(dout.data<T>(), dx.data<T>(), dx.numel(), stream_of(ctx));
  });
}

// reduce_mean's walk (ops/common/broadcast.h) as a launch index.
struct DeviceReduction {
  launch::BroadcastIndex index;
  std::vector<int64_t> out_shape;
  int64_t count;  // elements of X per output element
};

DeviceReduction reduction_of(KernelContext& ctx, const meta::ReduceMeta& rules,
                             const std::vector<int64_t>& shape) {
  const ctp::Reduction r = plan_reduction(rules, shape);
  return {index_of(ctx, r.plan), r.out_shape, r.count};
}

// Sums each output's elements in X's order (as the CPU kernel), then scales
// the sum before rounding it: by 1/count for reduce_mean (kMean), by 1 for
// reduce_sum.
template <bool kMean>
void reduce(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const DeviceReduction r = reduction_of(
      ctx, kMean ? meta::reduce_mean(ctx, meta_of(x)) : meta::reduce_sum(ctx, meta_of(x)),
      x.shape());
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), r.out_shape);
    launch::binary_grad<T>(Binary::Add, true, x.data<T>(), nullptr, out.data<T>(), out.numel(),
                           r.index, stream_of(ctx),
                           grad_workspace<T>(ctx, Binary::Add, true, out.numel(), r.index),
                           kMean ? reciprocal<T>(r.count) : 1.0);
  });
}

template <bool kMean>
void reduce_grad(KernelContext& ctx) {
  const Tensor& x = ctx.shape_input("X");
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const std::vector<int64_t> shape = x.shape();
  DeviceReduction r = reduction_of(
      ctx,
      kMean ? meta::reduce_mean_grad(ctx, meta_of(x), meta_of(dout))
            : meta::reduce_sum_grad(ctx, meta_of(x), meta_of(dout)),
      shape);
  // Read Out@GRAD through the output strides (the plan's Y side).
  for (int d = 0; d < r.index.rank; ++d) r.index.x_strides[d] = r.index.y_strides[d];
  dispatch_mixed(dout.dtype(), ctx, "Out@GRAD", [&]<typename T>() {
    Tensor& dx = device_output(ctx, "X@GRAD", 0, dout.dtype(), shape);
    launch::broadcast_scale<T>(dout.data<T>(), dx.data<T>(), kMean ? reciprocal<T>(r.count) : 1.0,
                               r.index, stream_of(ctx));
  });
}

}  // namespace

CTP_REGISTER_KERNEL(reduce_mean, CUDA, reduce<true>);
CTP_REGISTER_KERNEL(reduce_mean_grad, CUDA, reduce_grad<true>);
CTP_REGISTER_KERNEL(reduce_sum, CUDA, reduce<false>);
CTP_REGISTER_KERNEL(reduce_sum_grad, CUDA, reduce_grad<false>);
CTP_REGISTER_KERNEL(elementwise_add, CUDA, elementwise<Binary::Add>);
CTP_REGISTER_KERNEL(elementwise_sub, CUDA, elementwise<Binary::Sub>);
CTP_REGISTER_KERNEL(elementwise_mul, CUDA, elementwise<Binary::Mul>);
CTP_REGISTER_KERNEL(elementwise_div, CUDA, elementwise<Binary::Div>);
CTP_REGISTER_KERNEL(elementwise_add_grad, CUDA, elementwise_grad<Binary::Add>);
CTP_REGISTER_KERNEL(elementwise_sub_grad, CUDA, elementwise_grad<Binary::Sub>);
CTP_REGISTER_KERNEL(elementwise_mul_grad, CUDA, elementwise_grad<Binary::Mul>);
CTP_REGISTER_KERNEL(elementwise_div_grad, CUDA, elementwise_div_grad);
CTP_REGISTER_KERNEL(relu, CUDA, relu);
CTP_REGISTER_KERNEL(relu_grad, CUDA, relu_grad);
// A run of independent scales (mixed precision's unscaling of every
// gradient): one launch per dtype, factor and bias.
CTP_REGISTER_KERNEL(scale, CUDA, (run_one<prepare_scale, launch_scale>));
CTP_REGISTER_BATCH_KERNEL(scale, CUDA, (run_batch<prepare_scale, launch_scale>));
CTP_REGISTER_KERNEL(sum, CUDA, sum);
CTP_REGISTER_KERNEL(mean, CUDA, mean);
CTP_REGISTER_KERNEL(mean_grad, CUDA, mean_grad);

}  // namespace ctp::cuda
