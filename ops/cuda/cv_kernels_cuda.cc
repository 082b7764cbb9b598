// CUDA kernels of pool2d and batch_norm (FP32, FP64, FP16, BF16; batch_norm's
// statistics, scale and bias FP32 beside 16-bit X) and their grads, under the rules of ops/schema/meta_conv.h and
// meta_batch_norm.h, launching ops/cuda/cv_kernels.cu (16-bit X with batch
// statistics: cuDNN's, ops/cuda/batch_norm_cudnn.h). pool2d has its own
// kernels rather than cuDNN's: cuDNN pools with one padding per dim and has
// no adaptive windows or ceil_mode, which Paddle's pool2d has.
#include <type_traits>

#include "ops/common/kernel_util.h"
#include "ops/cuda/batch_norm_cudnn.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/cv_device_kernels.h"
#include "ops/schema/meta_batch_norm.h"
#include "ops/schema/meta_conv.h"

namespace ctp::cuda {
namespace {

launch::PoolGeometry geometry_of(const meta::Pool2dMeta& m) {
  launch::PoolGeometry g{};
  g.planes = m.batch * m.channels;
  g.in_h = m.in_h;
  g.in_w = m.in_w;
  g.out_h = m.out_h;
  g.out_w = m.out_w;
  for (int d = 0; d < 2; ++d) {
    g.kernel[d] = m.window.kernel[static_cast<std::size_t>(d)];
    g.stride[d] = m.window.stride[static_cast<std::size_t>(d)];
    g.pad_before[d] = m.window.pad_before(d);
  }
  g.max = m.max;
  g.adaptive = m.adaptive;
  g.exclusive = m.exclusive;
  return g;
}

void pool2d(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const meta::Pool2dMeta m = meta::pool2d(ctx, meta_of(x));
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Out", 0, x.dtype(), m.out_shape);
    launch::pool2d<T>(x.data<T>(), out.data<T>(), geometry_of(m),
                      device_context(ctx).compute_stream());
  });
}

void pool2d_grad(KernelContext& ctx) {
  const Tensor x = device_input(ctx, "X");
  const Tensor out = device_input(ctx, "Out");
  const Tensor dout = device_input(ctx, "Out@GRAD");
  const meta::Pool2dMeta m = meta::pool2d_grad(ctx, meta_of(x), meta_of(out), meta_of(dout));
  if (!ctx.has_output("X@GRAD")) return;
  dispatch_mixed(x.dtype(), ctx, "X", [&]<typename T>() {
    Tensor& dx = device_output(ctx, "X@GRAD", 0, x.dtype(), x.shape());
    launch::pool2d_grad<T>(x.data<T>(), out.data<T>(), dout.data<T>(), dx.data<T>(),
                           geometry_of(m), device_context(ctx).compute_stream());
  });
}

launch::BatchNormGeometry geometry_of(const meta::BatchNormMeta& m) {
  return {m.outer, m.channels, m.inner, m.epsilon, m.momentum, m.batch_stats};
}

// The output of `slot` as a [channels] statistics tensor, or `scratch` (room
// for one in the device workspace) when the op leaves that output out.
template <typename T>
T* stats_output(KernelContext& ctx, const char* slot, const meta::BatchNormMeta& m, T* scratch) {
  if (!ctx.has_output(slot)) return scratch;
  return device_output(ctx, slot, 0, m.stats_dtype, m.channel_shape).data<T>();
}

// `count` [channels] vectors, then the launches' partial sums.
template <typename T>
T* scratch_vectors(KernelContext& ctx, const meta::BatchNormMeta& m, int count) {
  const int64_t elements = count * m.channels + launch::batch_norm_partials(geometry_of(m));
  return static_cast<T*>(
      device_context(ctx).compute_workspace(static_cast<std::size_t>(elements) * sizeof(T)));
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
    DeviceContext& dc = device_context(ctx);
    if constexpr (std::is_same_v<U, float>) {
      if (cudnn_batch_norm_applies(x.dtype(), m) &&
          cudnn_batch_norm_forward(dc, x.dtype(), m, x.raw_data(), y.raw_data(), scale.data<U>(),
                                   bias.data<U>(), saved_mean, saved_var)) {
        launch::batch_norm_running_stats(saved_mean, saved_var, mean.data<U>(), var.data<U>(),
                                         mean_out, var_out, geometry_of(m), dc.compute_stream());
        return;
      }
    }
    launch::batch_norm<T>(x.data<T>(), scale.data<U>(), bias.data<U>(), mean.data<U>(),
                          var.data<U>(), y.data<T>(), mean_out, var_out, saved_mean, saved_var,
                          scratch + 4 * m.channels, geometry_of(m),
                          device_context(ctx).compute_stream());
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
    if constexpr (std::is_same_v<U, float>) {
      if (dx && cudnn_batch_norm_applies(x.dtype(), m) &&
          cudnn_batch_norm_backward(device_context(ctx), x.dtype(), m, x.raw_data(),
                                    dy.raw_data(), dx, scale.data<U>(), dscale, dbias,
                                    mean.data<U>(), spread.data<U>()))
        return;
    }
    launch::batch_norm_grad<T>(x.data<T>(), scale.data<U>(), mean.data<U>(), spread.data<U>(),
                               dy.data<T>(), dx, dscale, dbias, scratch + 2 * m.channels,
                               geometry_of(m), device_context(ctx).compute_stream());
  });
}

}  // namespace

CTP_REGISTER_KERNEL(pool2d, CUDA, pool2d);
CTP_REGISTER_KERNEL(pool2d_grad, CUDA, pool2d_grad);
CTP_REGISTER_KERNEL(batch_norm, CUDA, batch_norm);
CTP_REGISTER_KERNEL(batch_norm_grad, CUDA, batch_norm_grad);

}  // namespace ctp::cuda
