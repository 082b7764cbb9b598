// The device launchers of batch_norm and batch_norm_grad
// (ops/cuda/batch_norm_kernels.cu). Each queues on `s` and returns; the
// geometry comes from the op's rules (ops/schema/meta_batch_norm.h).
#pragma once
#include <cstdint>
#include <type_traits>

#include "ops/cuda/device_kernels.h"

namespace ctp::cuda::launch {

// X viewed as [outer, channels, inner] (NCHW: inner = H * W; NHWC: inner = 1).
// T is float, double, Half or BFloat16; the statistics, scale and bias are
// BatchNormStat<T>: FP32 beside 16-bit X, whose elements are computed in
// float and rounded once. The formulas are the CPU kernel's
// (ops/cpu/batch_norm_kernels.cc): the batch's mean and biased variance,
// SavedVariance = 1 / sqrt(variance + epsilon), running statistics moved by
// momentum; without batch statistics Mean and Variance normalize and are
// copied to MeanOut and VarianceOut.
template <typename T>
using BatchNormStat = std::conditional_t<std::is_same_v<T, double>, double, float>;
struct BatchNormGeometry {
  int64_t outer, channels, inner;
  double epsilon, momentum;
  bool batch_stats;
};

// Both take `scratch`, batch_norm_scratch(g) elements of BatchNormStat
// (device memory used on `s`) for their per-channel partial sums and
// coefficients, and `counters`, at least `channels` zeroed counters on the
// device that they leave zeroed: a channel's last block to add its sums
// finishes the channel (so no kernel of its own runs for the statistics).
int64_t batch_norm_scratch(const BatchNormGeometry& g);

// mean_out may be running_mean and var_out running_var (the usual program).
template <typename T, typename U = BatchNormStat<T>>
void batch_norm(const T* x, const U* scale, const U* bias, const U* running_mean,
                const U* running_var, T* y, U* mean_out, U* var_out, U* saved_mean,
                U* saved_inv_std, U* scratch, unsigned* counters, const BatchNormGeometry& g,
                Stream s);

// `mean` and `spread` are SavedMean and SavedVariance (1 / std) with batch
// statistics, else Mean and Variance (spread then a variance). dx may be
// null; dscale and dbias may not.
template <typename T, typename U = BatchNormStat<T>>
void batch_norm_grad(const T* x, const U* scale, const U* mean, const U* spread, const T* dy,
                     T* dx, U* dscale, U* dbias, U* scratch, unsigned* counters,
                     const BatchNormGeometry& g, Stream s);

}  // namespace ctp::cuda::launch
