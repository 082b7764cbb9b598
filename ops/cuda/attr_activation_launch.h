// Launchers of relu6, hard_sigmoid, hard_swish and swish and their
// gradients (attr_activation_kernels.cu). T is float, double, Half or
// BFloat16 (16-bit elements computed in float and rounded once, as on the
// CPU); the formulas are the CPU kernels' own
// (ops/common/attr_activation_math.h).
#pragma once
#include <cstdint>

#include "ops/common/attr_activation_math.h"
#include "ops/cuda/device_kernels.h"

namespace ctp::cuda::launch {

template <typename T>
void attr_activation(ctp::attr_activation::Kind kind, const ctp::attr_activation::Coefficients& k,
                     const T* x, T* out, int64_t n, Stream s);
// `in` is Out or X, as ctp::attr_activation::grad_reads_out says.
template <typename T>
void attr_activation_grad(ctp::attr_activation::Kind kind,
                          const ctp::attr_activation::Coefficients& k, const T* in, const T* dout,
                          T* dx, int64_t n, Stream s);

}  // namespace ctp::cuda::launch
