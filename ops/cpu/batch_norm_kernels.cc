// batch_norm and batch_norm_grad on the CPU, X read as [outer, channels,
// inner] (NCHW or NHWC, ops/schema/meta_batch_norm.h). As Paddle's CPU kernel:
// training normalizes by the batch's mean and biased variance, SavedMean and
// SavedVariance hold that mean and 1 / sqrt(variance + epsilon), and the
// running statistics move by momentum toward the batch's (biased) ones. With
// is_test or use_global_stats, Mean and Variance normalize; MeanOut and
// VarianceOut are copies of them and the saved pair is what was used.
#include <cmath>
#include <vector>

#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cpu/float16_compute.h"
#include "ops/schema/meta_batch_norm.h"

namespace ctp::cpu {
namespace {

// Calls f(index) for every element of channel c.
template <typename F>
void for_channel(const meta::BatchNormMeta& m, int64_t c, F&& f) {
  for (int64_t o = 0; o < m.outer; ++o) {
    const int64_t base = (o * m.channels + c) * m.inner;
    for (int64_t i = 0; i < m.inner; ++i) f(base + i);
  }
}

template <typename T>
std::vector<T> copy_of(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

Tensor* optional_output(KernelContext& ctx, const char* slot) {
  return ctx.has_output(slot) ? &ctx.output(slot) : nullptr;
}

void batch_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input("X");
  const meta::BatchNormMeta m =
      meta::batch_norm(ctx, meta_of(x), meta_of(ctx.input("Scale")), meta_of(ctx.input("Bias")),
                       meta_of(ctx.input("Mean")), meta_of(ctx.input("Variance")));
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    // Copies first: MeanOut and VarianceOut are usually Mean and Variance's own vars.
    const std::vector<T> scale = copy_of<T>(ctx.input("Scale"));
    const std::vector<T> bias = copy_of<T>(ctx.input("Bias"));
    const std::vector<T> running_mean = copy_of<T>(ctx.input("Mean"));
    const std::vector<T> running_var = copy_of<T>(ctx.input("Variance"));
    const auto count = static_cast<T>(m.outer * m.inner);
    const auto momentum = static_cast<T>(m.momentum), epsilon = static_cast<T>(m.epsilon);
    std::vector<T> mean(running_mean), inv_std(static_cast<std::size_t>(m.channels));
    std::vector<T> mean_out(running_mean), var_out(running_var);
    const T* xp = x.data<T>();
    for (int64_t c = 0; c < m.channels; ++c) {
      T var = running_var[c];
      if (m.batch_stats) {
        T sum = 0, squares = 0;
        for_channel(m, c, [&](int64_t i) { sum += xp[i]; });
        mean[c] = sum / count;
        for_channel(m, c, [&](int64_t i) { squares += (xp[i] - mean[c]) * (xp[i] - mean[c]); });
        var = squares / count;
        mean_out[c] = running_mean[c] * momentum + mean[c] * (T(1) - momentum);
        var_out[c] = running_var[c] * momentum + var * (T(1) - momentum);
      }
      inv_std[c] = T(1) / std::sqrt(var + epsilon);
    }
    Tensor& y = ctx.output("Y");
    y.resize(x.dtype(), x.shape());
    T* yp = y.data<T>();
    for (int64_t c = 0; c < m.channels; ++c)
      for_channel(m, c, [&](int64_t i) {
        yp[i] = (xp[i] - mean[c]) * inv_std[c] * scale[c] + bias[c];
      });
    const std::pair<const char*, const std::vector<T>*> stats[] = {
        {"MeanOut", &mean_out}, {"VarianceOut", &var_out},
        {"SavedMean", &mean},   {"SavedVariance", &inv_std}};
    for (const auto& [slot, values] : stats)
      if (Tensor* t = optional_output(ctx, slot)) {
        t->resize(m.stats_dtype, m.channel_shape);
        std::copy(values->begin(), values->end(), t->data<T>());
      }
    if (Tensor* reserve = optional_output(ctx, "ReserveSpace")) reserve->resize(x.dtype(), {0});
  });
}

// With batch statistics: dX = scale * inv_std * (dY - mean(dY) - x_hat *
// mean(dY * x_hat)); with fixed ones, dX = scale * inv_std * dY. dScale =
// sum(dY * x_hat), dBias = sum(dY) per channel.
void batch_norm_grad(KernelContext& ctx) {
  const Tensor& x = ctx.input("X");
  const Tensor& dy = ctx.input("Y@GRAD");
  const meta::BatchNormMeta m = meta::batch_norm_grad(
      ctx, meta_of(x), meta_of(ctx.input("Scale")), meta_of(ctx.input("SavedMean")),
      meta_of(ctx.input("SavedVariance")), meta_of(dy));
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    const std::vector<T> scale = copy_of<T>(ctx.input("Scale"));
    std::vector<T> mean, inv_std;
    if (m.batch_stats) {
      mean = copy_of<T>(ctx.input("SavedMean"));
      inv_std = copy_of<T>(ctx.input("SavedVariance"));
    } else {
      mean = copy_of<T>(ctx.input("Mean"));
      inv_std = copy_of<T>(ctx.input("Variance"));
      for (T& v : inv_std) v = T(1) / std::sqrt(v + static_cast<T>(m.epsilon));
    }
    const auto count = static_cast<T>(m.outer * m.inner);
    const T* xp = x.data<T>();
    const T* g = dy.data<T>();
    std::vector<T> sum_dy(static_cast<std::size_t>(m.channels), T(0)), sum_dy_xhat(sum_dy);
    for (int64_t c = 0; c < m.channels; ++c)
      for_channel(m, c, [&](int64_t i) {
        sum_dy[c] += g[i];
        sum_dy_xhat[c] += g[i] * (xp[i] - mean[c]) * inv_std[c];
      });
    if (Tensor* dx = optional_output(ctx, "X@GRAD")) {
      dx->resize(x.dtype(), x.shape());
      T* d = dx->data<T>();
      for (int64_t c = 0; c < m.channels; ++c)
        for_channel(m, c, [&](int64_t i) {
          const T k = scale[c] * inv_std[c];
          d[i] = m.batch_stats ? k * (g[i] - sum_dy[c] / count -
                                      (xp[i] - mean[c]) * inv_std[c] * sum_dy_xhat[c] / count)
                               : k * g[i];
        });
    }
    const std::pair<const char*, const std::vector<T>*> grads[] = {{"Scale@GRAD", &sum_dy_xhat},
                                                                   {"Bias@GRAD", &sum_dy}};
    for (const auto& [slot, values] : grads)
      if (Tensor* t = optional_output(ctx, slot)) {
        t->resize(m.stats_dtype, m.channel_shape);
        std::copy(values->begin(), values->end(), t->data<T>());
      }
  });
}

}  // namespace

// FP16/BF16 X (and Y@GRAD) computed in float beside FP32 statistics, scale
// and bias, which stay FP32 (ops/schema/meta_batch_norm.h).
CTP_REGISTER_KERNEL(batch_norm, CPU,
                    computed_in_float(batch_norm, {"Scale", "Bias", "Mean", "Variance"},
                                      {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance",
                                       "ReserveSpace"}));
CTP_REGISTER_KERNEL(batch_norm_grad, CPU,
                    computed_in_float(batch_norm_grad,
                                      {"Scale", "Bias", "Mean", "Variance", "SavedMean",
                                       "SavedVariance", "ReserveSpace"},
                                      {"Scale@GRAD", "Bias@GRAD"}));

}  // namespace ctp::cpu
