// layer_norm and layer_norm_grad over rows of X (ops/schema/meta_norm.h).
// FP16 and BF16 X are computed in float (computed_in_float) with Scale,
// Bias, Mean and Variance in FP32, as Paddle keeps them.
#include <cmath>
#include <optional>
#include <vector>

#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cpu/float16_compute.h"
#include "ops/schema/meta_norm.h"

namespace ctp::cpu {
namespace {

std::optional<Tensor> optional_input(KernelContext& ctx, const char* slot) {
  if (!ctx.has_input(slot)) return std::nullopt;
  return ctx.input(slot);
}

std::optional<TensorMeta> meta_if(const std::optional<Tensor>& t) {
  if (!t) return std::nullopt;
  return meta_of(*t);
}

template <typename T>
const T* data_if(const std::optional<Tensor>& t) {
  return t ? t->data<T>() : nullptr;
}

// A [rows] statistics output, or scratch when the op leaves it out.
template <typename T>
T* statistics(KernelContext& ctx, const char* slot, const meta::LayerNormMeta& m,
              std::vector<T>& scratch) {
  if (!ctx.has_output(slot)) {
    scratch.assign(static_cast<std::size_t>(m.rows), T(0));
    return scratch.data();
  }
  Tensor& t = ctx.output(slot);
  t.resize(m.stat_dtype, m.stat_shape);
  return t.data<T>();
}

void layer_norm(KernelContext& ctx) {
  const Tensor x = ctx.input("X");
  const std::optional<Tensor> scale = optional_input(ctx, "Scale");
  const std::optional<Tensor> bias = optional_input(ctx, "Bias");
  const meta::LayerNormMeta m = meta::layer_norm(ctx, meta_of(x), meta_if(scale), meta_if(bias));
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    std::vector<T> mean_scratch, var_scratch;
    T* mean = statistics<T>(ctx, "Mean", m, mean_scratch);
    T* var = statistics<T>(ctx, "Variance", m, var_scratch);
    Tensor& y = ctx.output("Y");
    y.resize(x.dtype(), x.shape());
    const T* xp = x.data<T>();
    const T* s = data_if<T>(scale);
    const T* b = data_if<T>(bias);
    T* yp = y.data<T>();
    const T cols = static_cast<T>(m.cols);
    for (int64_t r = 0; r < m.rows; ++r) {
      const T* row = xp + r * m.cols;
      T sum = 0;
      for (int64_t c = 0; c < m.cols; ++c) sum += row[c];
      const T mu = sum / cols;
      T squares = 0;
      for (int64_t c = 0; c < m.cols; ++c) squares += (row[c] - mu) * (row[c] - mu);
      const T sigma2 = squares / cols;
      const T rstd = T(1) / std::sqrt(sigma2 + static_cast<T>(m.epsilon));
      T* out = yp + r * m.cols;  // may be X's row: each element is read before it is written
      for (int64_t c = 0; c < m.cols; ++c) {
        T v = (row[c] - mu) * rstd;
        if (s) v *= s[c];
        if (b) v += b[c];
        out[c] = v;
      }
      mean[r] = mu;
      var[r] = sigma2;
    }
  });
}

// With xhat = (x - mean) * rstd and g = dY * Scale: dX = rstd * (g - mean(g)
// - xhat * mean(g * xhat)) per row; dScale = sum over rows of dY * xhat,
// dBias = sum over rows of dY.
void layer_norm_grad(KernelContext& ctx) {
  const Tensor x = ctx.input("X");
  const std::optional<Tensor> scale = optional_input(ctx, "Scale");
  const std::optional<Tensor> bias = optional_input(ctx, "Bias");
  const Tensor mean = ctx.input("Mean");
  const Tensor var = ctx.input("Variance");
  const Tensor dy = ctx.input("Y@GRAD");
  const meta::LayerNormMeta m = meta::layer_norm_grad(
      ctx, meta_of(x), meta_if(scale), meta_if(bias), meta_of(mean), meta_of(var), meta_of(dy));
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    const auto grad = [&](const char* slot, const Shape& shape) -> T* {
      if (!ctx.has_output(slot)) return nullptr;
      Tensor& t = ctx.output(slot);
      t.resize(x.dtype(), shape);
      fill(t, 0.0);
      return t.data<T>();
    };
    T* dx = grad("X@GRAD", x.shape());
    T* dscale = scale ? grad("Scale@GRAD", scale->shape()) : nullptr;
    T* dbias = bias ? grad("Bias@GRAD", bias->shape()) : nullptr;
    const T* s = data_if<T>(scale);
    const T cols = static_cast<T>(m.cols);
    std::vector<T> g(static_cast<std::size_t>(m.cols));
    for (int64_t r = 0; r < m.rows; ++r) {
      const T* xr = x.data<T>() + r * m.cols;
      const T* dyr = dy.data<T>() + r * m.cols;
      const T mu = mean.data<T>()[r];
      const T rstd = T(1) / std::sqrt(var.data<T>()[r] + static_cast<T>(m.epsilon));
      T sum_g = 0, sum_gx = 0;
      for (int64_t c = 0; c < m.cols; ++c) {
        const T xhat = (xr[c] - mu) * rstd;
        g[c] = s ? dyr[c] * s[c] : dyr[c];
        sum_g += g[c];
        sum_gx += g[c] * xhat;
        if (dscale) dscale[c] += dyr[c] * xhat;
        if (dbias) dbias[c] += dyr[c];
      }
      if (!dx) continue;
      const T mean_g = sum_g / cols, mean_gx = sum_gx / cols;
      for (int64_t c = 0; c < m.cols; ++c) {
        const T xhat = (xr[c] - mu) * rstd;
        dx[r * m.cols + c] = rstd * (g[c] - mean_g - xhat * mean_gx);
      }
    }
  });
}

}  // namespace

CTP_REGISTER_KERNEL(layer_norm, CPU,
                    computed_in_float(layer_norm, {"Scale", "Bias"}, {"Mean", "Variance"}));
CTP_REGISTER_KERNEL(layer_norm_grad, CPU,
                    computed_in_float(layer_norm_grad, {"Scale", "Bias", "Mean", "Variance"},
                                      {"Scale@GRAD", "Bias@GRAD"}));

}  // namespace ctp::cpu
