// Launchers of the activation, clip and dropout kernels and of
// elementwise_div's gradient terms (activation_kernels.cu). Plain types, as
// device_kernels.h; T is float, double, Half or BFloat16 (16-bit elements
// computed in float and rounded once, as on the CPU). The element formulas
// are the CPU kernels' own (ops/common/activation_math.h, dropout_mask.h).
#pragma once
#include <cstdint>

#include "ops/common/activation_math.h"
#include "ops/cuda/device_kernels.h"

namespace ctp::cuda::launch {

template <typename T>
void unary_activation(ctp::activation::Kind kind, const T* x, T* out, int64_t n, Stream s);
// `in` is Out or X, as ctp::activation::grad_reads_out says.
template <typename T>
void unary_activation_grad(ctp::activation::Kind kind, const T* in, const T* dout, T* dx, int64_t n,
                           Stream s);

template <typename T>
void clip(const T* x, T* out, int64_t n, double min, double max, Stream s);
template <typename T>
void clip_grad(const T* x, const T* dout, T* dx, int64_t n, double min, double max, Stream s);

// dropout in training: out and the mask (null: not kept) from the draws of
// `seed`. Its gradient: dout through the mask with the same scale.
template <typename T>
void dropout(const T* x, T* out, uint8_t* mask, int64_t n, uint64_t seed, float prob,
             bool upscale_in_train, Stream s);
template <typename T>
void dropout_grad(const uint8_t* mask, const T* dout, T* dx, int64_t n, float prob,
                  bool upscale_in_train, Stream s);
// dropout with is_test, and its gradient: out = x times the inference scale.
template <typename T>
void dropout_test(const T* x, T* out, int64_t n, float prob, bool upscale_in_train, Stream s);

// elementwise_div's gradients before their broadcast sums, over the output:
// dx_term[o] = dout[o] / y[j], dy_term[o] = -dout[o] * out[o] / y[j] (as
// Paddle's), j from index.y_strides; a null term is not written.
template <typename T>
void div_grad_terms(const T* dout, const T* out, const T* y, T* dx_term, T* dy_term,
                    const BroadcastIndex& index, Stream s);

}  // namespace ctp::cuda::launch
