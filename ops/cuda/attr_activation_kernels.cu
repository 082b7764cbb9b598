// relu6, hard_sigmoid, hard_swish and swish on the GPU: one thread per
// element over a grid-stride loop, with the CPU kernels' formulas
// (ops/common/attr_activation_math.h).
#include "ops/cuda/attr_activation_launch.h"
#include "ops/cuda/device_math.cuh"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh
using ctp::attr_activation::Coefficients;
using ctp::attr_activation::Kind;

template <typename T>
__global__ void forward_kernel(Kind kind, Coefficients k, const T* x, T* out, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    out[i] = narrow<T>(ctp::attr_activation::forward(kind, widen(x[i]), k));
}

template <typename T>
__global__ void backward_kernel(Kind kind, Coefficients k, const T* in, const T* dout, T* dx,
                                int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    dx[i] = narrow<T>(ctp::attr_activation::backward(kind, widen(in[i]), widen(dout[i]), k));
}

}  // namespace

template <typename T>
void attr_activation(Kind kind, const Coefficients& k, const T* x, T* out, int64_t n, Stream s) {
  if (n > 0) forward_kernel<T><<<grid_for(n), kThreads, 0, s>>>(kind, k, x, out, n);
}

template <typename T>
void attr_activation_grad(Kind kind, const Coefficients& k, const T* in, const T* dout, T* dx,
                          int64_t n, Stream s) {
  if (n > 0) backward_kernel<T><<<grid_for(n), kThreads, 0, s>>>(kind, k, in, dout, dx, n);
}

#define CTP_INSTANTIATE_ATTR_ACTIVATION(T)                                                    \
  template void attr_activation<T>(Kind, const Coefficients&, const T*, T*, int64_t, Stream); \
  template void attr_activation_grad<T>(Kind, const Coefficients&, const T*, const T*, T*,    \
                                        int64_t, Stream);

CTP_INSTANTIATE_ATTR_ACTIVATION(float)
CTP_INSTANTIATE_ATTR_ACTIVATION(double)
CTP_INSTANTIATE_ATTR_ACTIVATION(Half)
CTP_INSTANTIATE_ATTR_ACTIVATION(BFloat16)

}  // namespace ctp::cuda::launch
