// The simulated-quantization ops on the GPU (ops/cuda/quant_device_kernels.h).
#include "ops/common/quant_math.h"
#include "ops/cuda/device_math.cuh"
#include "ops/cuda/quant_device_kernels.h"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh

template <typename T>
__global__ void fake_quantize_kernel(const T* x, const T* in_scale, T* out, T* out_scale,
                                     int64_t n, T bins, int round_type, bool dequantize) {
  const T scale = in_scale[0];
  for (int64_t i = first_index(); i < n; i += grid_stride())
    out[i] = dequantize ? quant::quantize_dequantize(x[i], scale, bins, round_type)
                        : quant::quantize(x[i], scale, bins, round_type);
  // Every thread read the scale above; when OutScale is InScale this writes
  // the value it already holds.
  if (out_scale && first_index() == 0) out_scale[0] = scale;
}

template <typename T>
__global__ void fake_dequantize_kernel(const T* x, const T* scale, T* out, int64_t n, T range) {
  const T s = scale[0];
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = quant::dequantize(x[i], s, range);
}

}  // namespace

template <typename T>
void fake_quantize(const T* x, const T* in_scale, T* out, T* out_scale, int64_t n,
                   int64_t bin_cnt, int round_type, bool dequantize, Stream s) {
  // One launch even for n == 0, so OutScale is written.
  fake_quantize_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
      x, in_scale, out, out_scale, n, static_cast<T>(bin_cnt), round_type, dequantize);
}

template <typename T>
void fake_dequantize(const T* x, const T* scale, T* out, int64_t n, double max_range, Stream s) {
  if (n > 0)
    fake_dequantize_kernel<T><<<grid_for(n), kThreads, 0, s>>>(x, scale, out, n,
                                                                static_cast<T>(max_range));
}

template void fake_quantize<float>(const float*, const float*, float*, float*, int64_t, int64_t,
                                   int, bool, Stream);
template void fake_quantize<double>(const double*, const double*, double*, double*, int64_t,
                                    int64_t, int, bool, Stream);
template void fake_dequantize<float>(const float*, const float*, float*, int64_t, double, Stream);
template void fake_dequantize<double>(const double*, const double*, double*, int64_t, double,
                                      Stream);

}  // namespace ctp::cuda::launch
