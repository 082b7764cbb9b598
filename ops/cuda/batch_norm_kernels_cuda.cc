// CUDA kernels of batch_norm and batch_norm_grad (X FP32, FP64, FP16 or BF16;
// the statistics, scale and bias FP32 beside 16-bit X) under the rules of
// ops/schema/meta_batch_norm.h, launching ops/cuda/batch_norm_kernels.cu.
// ctp's own kernels rather than cuDNN's: they read X in 16-byte packs and
// take fewer passes (ResNet-50's BF16 step on an H100, bench/RESULTS.md),
// and update the running variance with the biased batch variance as
// Paddle's CPU kernel does, where cuDNN's update takes the unbiased one.
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>

#include "executor/cuda/cuda_check.h"
#include "ops/common/kernel_util.h"
#include "ops/cuda/batch_norm_device_kernels.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/schema/meta_batch_norm.h"

namespace ctp::cuda {
namespace {

launch::BatchNormGeometry geometry_of(const meta::BatchNormMeta& m) {
  return {m.outer, m.channels, m.inner, m.epsilon, m.momentum, m.batch_stats};
}

// Zeroed counters on the device, one per channel, that the launches count
// their blocks in (batch_norm_device_kernels.h), kept for the run in the
// DeviceContext: a counter left at 0 by every launch is reused by the next.
class ChannelCounters {
 public:
  ChannelCounters(int64_t count, cudaStream_t stream) : count_(count) {
    const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(unsigned);
    CTP_CUDA_CHECK(cudaMalloc(&data_, bytes));
    CTP_CUDA_CHECK(cudaMemsetAsync(data_, 0, bytes, stream));
  }
  ~ChannelCounters() { cudaFree(data_); }
  ChannelCounters(const ChannelCounters&) = delete;
  ChannelCounters& operator=(const ChannelCounters&) = delete;
  unsigned* data() const { return static_cast<unsigned*>(data_); }
  int64_t count() const { return count_; }

 private:
  void* data_ = nullptr;
  int64_t count_;
};

// At least `channels` counters. A larger set replaces a smaller one, whose
// cudaFree waits for the launches queued on it.
unsigned* channel_counters(KernelContext& ctx, int64_t channels) {
  DeviceContext& dc = device_context(ctx);
  const std::string key = "batch_norm.channel_counters";
  auto counters = std::static_pointer_cast<ChannelCounters>(dc.find_kernel_state(key));
  if (!counters || counters->count() < channels) {
    counters = std::make_shared<ChannelCounters>(std::max<int64_t>(channels, 4096),
                                                 dc.compute_stream());
    dc.remember_kernel_state(key, counters);
  }
  return counters->data();
}

// The output of `slot` as a [channels] statistics tensor, or `scratch` (room
// for one in the device workspace) when the op leaves that output out.
template <typename U>
U* stats_output(KernelContext& ctx, const char* slot, const meta::BatchNormMeta& m, U* scratch) {
  if (!ctx.has_output(slot)) return scratch;
  return device_output(ctx, slot, 0, m.stats_dtype, m.channel_shape).data<U>();
}

// `count` [channels] vectors, then the launches' own scratch.
template <typename U>
U* scratch_vectors(KernelContext& ctx, const meta::BatchNormMeta& m, int count) {
  const int64_t elements = count * m.channels + launch::batch_norm_scratch(geometry_of(m));
  return static_cast<U*>(
      device_context(ctx).compute_workspace(static_cast<std::size_t>(elements) * sizeof(U)));
}

void batch_norm(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor scale = device_input(ctx, "Scale");
  const Tensor bias = device_input(ctx, "Bias");
  // Copies of the handles: MeanOut and VarianceOut are usually these vars.
  const Tensor mean = device_input(ctx, "Mean");
  const Tensor var = device_input(ctx, "Variance");
  const meta::BatchNormMeta m = meta::batch_norm(ctx, meta_of(x), meta_of(scale), meta_of(bias),
                                                 meta_of(mean), meta_of(var));
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    using U = launch::BatchNormStat<T>;
    Tensor& y = device_output(ctx, "Y", 0, x.dtype(), x.shape());
    U* scratch = scratch_vectors<U>(ctx, m, 4);
    U* mean_out = stats_output<U>(ctx, "MeanOut", m, scratch);
    U* var_out = stats_output<U>(ctx, "VarianceOut", m, scratch + m.channels);
    U* saved_mean = stats_output<U>(ctx, "SavedMean", m, scratch + 2 * m.channels);
    U* saved_var = stats_output<U>(ctx, "SavedVariance", m, scratch + 3 * m.channels);
    if (ctx.has_output("ReserveSpace")) device_output(ctx, "ReserveSpace", 0, m.stats_dtype, {0});
    launch::batch_norm<T>(x.data<T>(), scale.data<U>(), bias.data<U>(), mean.data<U>(),
                          var.data<U>(), y.data<T>(), mean_out, var_out, saved_mean, saved_var,
                          scratch + 4 * m.channels, channel_counters(ctx, m.channels),
                          geometry_of(m), device_context(ctx).compute_stream());
  });
}

void batch_norm_grad(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor scale = device_input(ctx, "Scale");
  const Tensor dy = device_input(ctx, "Y@GRAD");
  const meta::BatchNormMeta m = meta::batch_norm_grad(
      ctx, meta_of(x), meta_of(scale), meta_of(ctx.input("SavedMean")),
      meta_of(ctx.input("SavedVariance")), meta_of(dy));
  const Tensor mean = device_input(ctx, m.batch_stats ? "SavedMean" : "Mean");
  const Tensor spread = device_input(ctx, m.batch_stats ? "SavedVariance" : "Variance");
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    using U = launch::BatchNormStat<T>;
    U* scratch = scratch_vectors<U>(ctx, m, 2);
    U* dscale = stats_output<U>(ctx, "Scale@GRAD", m, scratch);
    U* dbias = stats_output<U>(ctx, "Bias@GRAD", m, scratch + m.channels);
    T* dx = ctx.has_output("X@GRAD")
                ? device_output(ctx, "X@GRAD", 0, x.dtype(), x.shape()).data<T>()
                : nullptr;
    launch::batch_norm_grad<T>(x.data<T>(), scale.data<U>(), mean.data<U>(), spread.data<U>(),
                               dy.data<T>(), dx, dscale, dbias, scratch + 2 * m.channels,
                               channel_counters(ctx, m.channels), geometry_of(m),
                               device_context(ctx).compute_stream());
  });
}

}  // namespace

CTP_REGISTER_KERNEL(batch_norm, CUDA, batch_norm);
CTP_REGISTER_KERNEL(batch_norm_grad, CUDA, batch_norm_grad);

}  // namespace ctp::cuda
