// The activation, clip and dropout kernels and elementwise_div's gradient
// terms on the GPU: one thread per element over a grid-stride loop, with
// the CPU kernels' formulas (ops/common/activation_math.h, dropout_mask.h).
#include <cstdint>

#include "ops/common/activation_math.h"
#include "ops/common/dropout_mask.h"
#include "ops/cuda/activation_launch.h"
#include "ops/cuda/device_math.cuh"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh
using ctp::activation::Kind;

template <typename T>
__global__ void activation_kernel(Kind kind, const T* x, T* out, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    out[i] = narrow<T>(ctp::activation::forward(kind, widen(x[i])));
}

template <typename T>
__global__ void activation_grad_kernel(Kind kind, const T* in, const T* dout, T* dx, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    dx[i] = narrow<T>(ctp::activation::backward(kind, widen(in[i]), widen(dout[i])));
}

template <typename T>
__global__ void clip_kernel(const T* x, T* out, int64_t n, Compute<T> min, Compute<T> max) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    out[i] = narrow<T>(ctp::activation::clip(widen(x[i]), min, max));
}

template <typename T>
__global__ void clip_grad_kernel(const T* x, const T* dout, T* dx, int64_t n, Compute<T> min,
                                 Compute<T> max) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    dx[i] = narrow<T>(ctp::activation::clip_grad(widen(x[i]), min, max, widen(dout[i])));
}

template <typename T>
__global__ void dropout_kernel(const T* x, T* out, uint8_t* mask, int64_t n, uint64_t seed,
                               float prob, ctp::dropout::Scales scales) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const bool kept = ctp::dropout::keep(seed, i, prob);
    if (mask) mask[i] = kept ? 1 : 0;
    out[i] = narrow<T>(ctp::dropout::train_value(widen(x[i]), kept, scales));
  }
}

template <typename T>
__global__ void dropout_grad_kernel(const uint8_t* mask, const T* dout, T* dx, int64_t n,
                                    ctp::dropout::Scales scales) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    dx[i] = narrow<T>(ctp::dropout::train_value(widen(dout[i]), mask[i] != 0, scales));
}

template <typename T>
__global__ void scale_kernel(const T* x, T* out, int64_t n, Compute<T> factor) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    out[i] = narrow<T>(widen(x[i]) * factor);
}

template <typename T>
__global__ void div_grad_terms_kernel(const T* dout, const T* out, const T* y, T* dx_term,
                                      T* dy_term, BroadcastIndex index, int64_t n) {
  for (int64_t o = first_index(); o < n; o += grid_stride()) {
    int64_t rest = o, j = 0;
    for (int d = index.rank - 1; d >= 0; --d) {
      j += (rest % index.out_shape[d]) * index.y_strides[d];
      rest /= index.out_shape[d];
    }
    const Compute<T> g = widen(dout[o]), divisor = widen(y[j]);
    if (dx_term) dx_term[o] = narrow<T>(g / divisor);
    if (dy_term) dy_term[o] = narrow<T>(-g * widen(out[o]) / divisor);
  }
}

}  // namespace

template <typename T>
void unary_activation(Kind kind, const T* x, T* out, int64_t n, Stream s) {
  if (n > 0) activation_kernel<T><<<grid_for(n), kThreads, 0, s>>>(kind, x, out, n);
}

template <typename T>
void unary_activation_grad(Kind kind, const T* in, const T* dout, T* dx, int64_t n, Stream s) {
  if (n > 0) activation_grad_kernel<T><<<grid_for(n), kThreads, 0, s>>>(kind, in, dout, dx, n);
}

template <typename T>
void clip(const T* x, T* out, int64_t n, double min, double max, Stream s) {
  if (n > 0)
    clip_kernel<T><<<grid_for(n), kThreads, 0, s>>>(x, out, n, static_cast<Compute<T>>(min),
                                                    static_cast<Compute<T>>(max));
}

template <typename T>
void clip_grad(const T* x, const T* dout, T* dx, int64_t n, double min, double max, Stream s) {
  if (n > 0)
    clip_grad_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
        x, dout, dx, n, static_cast<Compute<T>>(min), static_cast<Compute<T>>(max));
}

template <typename T>
void dropout(const T* x, T* out, uint8_t* mask, int64_t n, uint64_t seed, float prob,
             bool upscale_in_train, Stream s) {
  if (n > 0)
    dropout_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
        x, out, mask, n, seed, prob, ctp::dropout::scales(prob, upscale_in_train));
}

template <typename T>
void dropout_grad(const uint8_t* mask, const T* dout, T* dx, int64_t n, float prob,
                  bool upscale_in_train, Stream s) {
  if (n > 0)
    dropout_grad_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
        mask, dout, dx, n, ctp::dropout::scales(prob, upscale_in_train));
}

template <typename T>
void dropout_test(const T* x, T* out, int64_t n, float prob, bool upscale_in_train, Stream s) {
  const auto factor =
      static_cast<Compute<T>>(ctp::dropout::scales(prob, upscale_in_train).test_scale);
  if (n > 0) scale_kernel<T><<<grid_for(n), kThreads, 0, s>>>(x, out, n, factor);
}

template <typename T>
void div_grad_terms(const T* dout, const T* out, const T* y, T* dx_term, T* dy_term,
                    const BroadcastIndex& index, Stream s) {
  int64_t n = 1;
  for (int d = 0; d < index.rank; ++d) n *= index.out_shape[d];
  if (n > 0)
    div_grad_terms_kernel<T>
        <<<grid_for(n), kThreads, 0, s>>>(dout, out, y, dx_term, dy_term, index, n);
}

#define CTP_INSTANTIATE_ACTIVATION(T)                                                          \
  template void unary_activation<T>(Kind, const T*, T*, int64_t, Stream);                      \
  template void unary_activation_grad<T>(Kind, const T*, const T*, T*, int64_t, Stream);       \
  template void clip<T>(const T*, T*, int64_t, double, double, Stream);                        \
  template void clip_grad<T>(const T*, const T*, T*, int64_t, double, double, Stream);         \
  template void dropout<T>(const T*, T*, uint8_t*, int64_t, uint64_t, float, bool, Stream);    \
  template void dropout_grad<T>(const uint8_t*, const T*, T*, int64_t, float, bool, Stream);   \
  template void dropout_test<T>(const T*, T*, int64_t, float, bool, Stream);                   \
  template void div_grad_terms<T>(const T*, const T*, const T*, T*, T*, const BroadcastIndex&, \
                                  Stream);

CTP_INSTANTIATE_ACTIVATION(float)
CTP_INSTANTIATE_ACTIVATION(double)
CTP_INSTANTIATE_ACTIVATION(Half)
CTP_INSTANTIATE_ACTIVATION(BFloat16)

}  // namespace ctp::cuda::launch
