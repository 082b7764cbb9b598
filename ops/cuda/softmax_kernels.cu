// softmax, softmax_grad, cross_entropy2 and cross_entropy_grad2 on the GPU:
// one thread per row (softmax: per [outer, inner] position), with the CPU
// kernels' formulas and order of operations; 16-bit elements are computed
// in float and rounded once (device_math.cuh). softmax over the last axis
// (inner 1) takes a warp per row instead: a thread per row read its row's
// elements 512 apart in BERT's attention (1.1 ms a softmax for 8 x 16 x 512
// rows on an H100); a warp reads 32 adjacent ones, and sums by a warp-wide
// tree, so FP32 results differ from the CPU's in the last bits.
#include <cmath>

#include "ops/cuda/device_kernels.h"
#include "ops/cuda/device_math.cuh"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh

template <typename T>
__global__ void softmax_kernel(const T* x, T* out, int64_t outer, int64_t classes,
                               int64_t inner) {
  using C = Compute<T>;
  const int64_t rows = outer * inner;
  for (int64_t row = first_index(); row < rows; row += grid_stride()) {
    const int64_t base = (row / inner) * classes * inner + row % inner;
    C max_value = widen(x[base]);
    for (int64_t c = 1; c < classes; ++c) max_value = max(max_value, widen(x[base + c * inner]));
    C sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += exp(widen(x[base + c * inner]) - max_value);
    for (int64_t c = 0; c < classes; ++c) {
      const int64_t at = base + c * inner;
      out[at] = narrow<T>(exp(widen(x[at]) - max_value) / sum);
    }
  }
}

template <typename T>
__global__ void softmax_grad_kernel(const T* y, const T* g, T* d, int64_t outer, int64_t classes,
                                    int64_t inner) {
  using C = Compute<T>;
  const int64_t rows = outer * inner;
  for (int64_t row = first_index(); row < rows; row += grid_stride()) {
    const int64_t base = (row / inner) * classes * inner + row % inner;
    C dot = 0;
    for (int64_t c = 0; c < classes; ++c)
      dot = add_rn(dot, mul_rn(widen(g[base + c * inner]), widen(y[base + c * inner])));
    for (int64_t c = 0; c < classes; ++c) {
      const int64_t at = base + c * inner;
      d[at] = narrow<T>(mul_rn(widen(y[at]), widen(g[at]) - dot));
    }
  }
}

constexpr unsigned kRowsPerBlock = kThreads / 32;

template <typename C>
__device__ C warp_max(C v) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <typename C>
__device__ C warp_sum(C v) {
  for (int o = 16; o > 0; o >>= 1) v = add_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Softmax over contiguous rows, a warp per row.
template <typename T>
__global__ void softmax_rows_kernel(const T* x, T* out, int64_t rows, int64_t classes) {
  using C = Compute<T>;
  const unsigned lane = threadIdx.x & 31u;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
       row < rows; row += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    const T* in = x + row * classes;
    C max_value = -INFINITY;
    for (int64_t c = lane; c < classes; c += 32) max_value = max(max_value, C(widen(in[c])));
    max_value = warp_max(max_value);
    C sum = 0;
    for (int64_t c = lane; c < classes; c += 32) sum += exp(C(widen(in[c])) - max_value);
    sum = warp_sum(sum);
    for (int64_t c = lane; c < classes; c += 32)
      out[row * classes + c] = narrow<T>(exp(C(widen(in[c])) - max_value) / sum);
  }
}

template <typename T>
__global__ void softmax_grad_rows_kernel(const T* y, const T* g, T* d, int64_t rows,
                                         int64_t classes) {
  using C = Compute<T>;
  const unsigned lane = threadIdx.x & 31u;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
       row < rows; row += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    const int64_t base = row * classes;
    C dot = 0;
    for (int64_t c = lane; c < classes; c += 32)
      dot = add_rn(dot, mul_rn(C(widen(g[base + c])), C(widen(y[base + c]))));
    dot = warp_sum(dot);
    for (int64_t c = lane; c < classes; c += 32)
      d[base + c] = narrow<T>(mul_rn(C(widen(y[base + c])), C(widen(g[base + c])) - dot));
  }
}

unsigned row_warp_blocks(int64_t rows) {
  const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  return static_cast<unsigned>(blocks < 65535 * 32 ? blocks : 65535 * 32);
}

template <typename T>
__global__ void cross_entropy2_kernel(const T* x, const void* label, bool label64,
                                      int64_t ignore_index, T* y, T* match_x, int64_t rows,
                                      int64_t classes) {
  for (int64_t row = first_index(); row < rows; row += grid_stride()) {
    const int64_t c = label_at(label, label64, row);
    if (c == ignore_index) {
      y[row] = match_x[row] = T(0);
    } else if (c < 0 || c >= classes) {
      y[row] = match_x[row] = T(NAN);  // host validation reports these
    } else {
      const T p = x[row * classes + c];
      T log_p = log(p);
      if (isinf(log_p)) log_p = log_p < 0 ? T(-1e20) : T(1e20);  // Paddle's TolerableValue
      match_x[row] = p;
      y[row] = -log_p;
    }
  }
}

template <typename T>
__global__ void cross_entropy_grad2_kernel(const T* match_x, const void* label, bool label64,
                                           int64_t ignore_index, const T* dy, T* dx,
                                           int64_t rows, int64_t classes) {
  const int64_t n = rows * classes;
  for (int64_t at = first_index(); at < n; at += grid_stride()) {
    const int64_t row = at / classes;
    const int64_t c = label_at(label, label64, row);
    dx[at] = (c != ignore_index && c == at % classes) ? -dy[row] / match_x[row] : T(0);
  }
}

}  // namespace

template <typename T>
void softmax(const T* x, T* out, int64_t outer, int64_t classes, int64_t inner, Stream s) {
  const int64_t rows = outer * inner;
  if (rows <= 0 || classes <= 0) return;
  if (inner == 1)
    softmax_rows_kernel<T><<<row_warp_blocks(rows), kThreads, 0, s>>>(x, out, rows, classes);
  else
    softmax_kernel<T><<<grid_for(rows), kThreads, 0, s>>>(x, out, outer, classes, inner);
}

template <typename T>
void softmax_grad(const T* out, const T* dout, T* dx, int64_t outer, int64_t classes,
                  int64_t inner, Stream s) {
  const int64_t rows = outer * inner;
  if (rows <= 0 || classes <= 0) return;
  if (inner == 1)
    softmax_grad_rows_kernel<T><<<row_warp_blocks(rows), kThreads, 0, s>>>(out, dout, dx, rows,
                                                                           classes);
  else
    softmax_grad_kernel<T><<<grid_for(rows), kThreads, 0, s>>>(out, dout, dx, outer, classes,
                                                                inner);
}

template <typename T>
void cross_entropy2(const T* x, const void* label, bool label64, int64_t ignore_index, T* y,
                    T* match_x, int64_t rows, int64_t classes, Stream s) {
  if (rows > 0)
    cross_entropy2_kernel<T><<<grid_for(rows), kThreads, 0, s>>>(x, label, label64, ignore_index,
                                                                  y, match_x, rows, classes);
}

template <typename T>
void cross_entropy_grad2(const T* match_x, const void* label, bool label64, int64_t ignore_index,
                         const T* dy, T* dx, int64_t rows, int64_t classes, Stream s) {
  const int64_t n = rows * classes;
  if (n > 0)
    cross_entropy_grad2_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
        match_x, label, label64, ignore_index, dy, dx, rows, classes);
}

#define CTP_INSTANTIATE_SOFTMAX(T)                                                          \
  template void softmax<T>(const T*, T*, int64_t, int64_t, int64_t, Stream);               \
  template void softmax_grad<T>(const T*, const T*, T*, int64_t, int64_t, int64_t, Stream);
#define CTP_INSTANTIATE_CROSS_ENTROPY2(T)                                                    \
  template void cross_entropy2<T>(const T*, const void*, bool, int64_t, T*, T*, int64_t,     \
                                  int64_t, Stream);                                          \
  template void cross_entropy_grad2<T>(const T*, const void*, bool, int64_t, const T*, T*,   \
                                       int64_t, int64_t, Stream);

CTP_INSTANTIATE_SOFTMAX(float)
CTP_INSTANTIATE_SOFTMAX(double)
CTP_INSTANTIATE_SOFTMAX(Half)
CTP_INSTANTIATE_SOFTMAX(BFloat16)
CTP_INSTANTIATE_CROSS_ENTROPY2(float)
CTP_INSTANTIATE_CROSS_ENTROPY2(double)

}  // namespace ctp::cuda::launch
