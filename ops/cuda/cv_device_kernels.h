// The device launchers of the image ops' CUDA kernels (ops/cuda/cv_kernels.cu):
// pool2d, batch_norm and the plane copies that pad a convolution's input
// when its paddings are asymmetric (cuDNN pads both sides alike). Each queues
// on `s` and returns; the geometry comes from the ops' rules.
#pragma once
#include <cstdint>
#include <type_traits>

#include "ops/cuda/device_kernels.h"

namespace ctp::cuda::launch {

// pool2d on `planes` planes [in_h, in_w] -> [out_h, out_w], the windows of
// ops/schema/meta_conv.h as the CPU kernel places them.
struct PoolGeometry {
  int64_t planes, in_h, in_w, out_h, out_w;
  int64_t kernel[2], stride[2], pad_before[2];
  bool max, adaptive, exclusive;
};
template <typename T>
void pool2d(const T* x, T* out, const PoolGeometry& g, Stream s);
// One thread per input cell adds the windows that read it, in the CPU's order.
template <typename T>
void pool2d_grad(const T* x, const T* out, const T* dout, T* dx, const PoolGeometry& g, Stream s);

// Copies a [rows, cols] block of each of `planes` planes from src (planes of
// src_h x src_w, starting at src_row, src_col) into dst (dst_h x dst_w, at
// dst_row, dst_col); the rest of dst is left as it is.
struct PlaneCopy {
  int64_t planes, rows, cols;
  int64_t src_h, src_w, src_row, src_col;
  int64_t dst_h, dst_w, dst_row, dst_col;
};
template <typename T>
void copy_planes(const T* src, T* dst, const PlaneCopy& c, Stream s);

// batch_norm on X viewed as [outer, channels, inner] (T: float, double, Half
// or BFloat16; the statistics, scale and bias in BatchNormStat<T>: FP32 for
// 16-bit X, whose elements are computed in float and rounded once), with the
// CPU kernel's formulas (ops/cpu/batch_norm_kernels.cc). Without batch
// statistics, Mean and Variance normalize and are copied to the outs.
// mean_out may be running_mean and var_out running_var.
template <typename T>
using BatchNormStat = std::conditional_t<std::is_same_v<T, double>, double, float>;
struct BatchNormGeometry {
  int64_t outer, channels, inner;
  double epsilon, momentum;
  bool batch_stats;
};
// The per-channel sums are split over several blocks per channel (a whole
// GPU's worth for few channels); `partials` is the caller's scratch of
// batch_norm_partials(g) elements for their partial sums.
int64_t batch_norm_partials(const BatchNormGeometry& g);
template <typename T, typename U = BatchNormStat<T>>
void batch_norm(const T* x, const U* scale, const U* bias, const U* running_mean,
                const U* running_var, T* y, U* mean_out, U* var_out, U* saved_mean,
                U* saved_inv_std, U* partials, const BatchNormGeometry& g, Stream s);
// `mean` and `spread` are SavedMean and SavedVariance (1 / std) with batch
// statistics, else Mean and Variance (spread then a variance). dx may be
// null; dscale and dbias may not.
template <typename T, typename U = BatchNormStat<T>>
void batch_norm_grad(const T* x, const U* scale, const U* mean, const U* spread, const T* dy,
                     T* dx, U* dscale, U* dbias, U* partials, const BatchNormGeometry& g,
                     Stream s);
// The running statistics from a batch's (saved_mean and saved_inv_std, as
// cuDNN leaves them): mean_out = momentum * running_mean + (1 - momentum) *
// batch mean, var_out likewise with the batch's biased variance (Paddle's,
// where cuDNN's own update takes the unbiased one). mean_out may be
// running_mean and var_out running_var.
void batch_norm_running_stats(const float* saved_mean, const float* saved_inv_std,
                              const float* running_mean, const float* running_var,
                              float* mean_out, float* var_out, const BatchNormGeometry& g,
                              Stream s);

}  // namespace ctp::cuda::launch
