// top_k, its gradient and accuracy on the GPU (ops/cuda/metric_device_kernels.h).
#include "ops/common/top_k_order.h"
#include "ops/cuda/device_math.cuh"
#include "ops/cuda/metric_device_kernels.h"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh

template <typename T>
__global__ void top_k_kernel(const T* x, T* out, int64_t* indices, TopKGeometry g) {
  const int64_t rows = g.outer * g.inner;
  for (int64_t row = first_index(); row < rows; row += grid_stride()) {
    const int64_t o = row / g.inner, i = row % g.inner;
    const T* in = x + o * g.n * g.inner + i;
    const int64_t base = o * g.k * g.inner + i;
    T prev = T(0);
    int64_t prev_at = -1;  // none picked yet
    for (int64_t j = 0; j < g.k; ++j) {
      // The first element (in top_k's order) after the previous pick.
      int64_t best = -1;
      T best_value = T(0);
      for (int64_t c = 0; c < g.n; ++c) {
        const T v = in[c * g.inner];
        if (prev_at >= 0 && !top_k_order::before(prev, prev_at, v, c, g.largest)) continue;
        if (best < 0 || top_k_order::before(v, c, best_value, best, g.largest)) {
          best = c;
          best_value = v;
        }
      }
      out[base + j * g.inner] = best_value;
      indices[base + j * g.inner] = best;
      prev = best_value;
      prev_at = best;
    }
  }
}

template <typename T>
__global__ void top_k_grad_kernel(const int64_t* indices, const T* dout, T* dx, TopKGeometry g) {
  const int64_t picks = g.outer * g.k * g.inner;
  for (int64_t at = first_index(); at < picks; at += grid_stride()) {
    const int64_t o = at / (g.k * g.inner), i = at % g.inner;
    const int64_t c = indices[at];
    // Each row's picks are distinct elements: no two threads write one.
    if (c >= 0 && c < g.n) dx[o * g.n * g.inner + c * g.inner + i] = dout[at];
  }
}

__global__ void accuracy_kernel(const int64_t* indices, const void* label, bool label64,
                                int64_t rows, int64_t k, float* accuracy, int32_t* correct,
                                int32_t* total) {
  __shared__ unsigned long long count;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  unsigned long long mine = 0;
  for (int64_t row = threadIdx.x; row < rows; row += blockDim.x) {
    const int64_t want = label_at(label, label64, row);
    for (int64_t j = 0; j < k; ++j)
      if (want >= 0 && indices[row * k + j] == want) {
        ++mine;
        break;
      }
  }
  atomicAdd(&count, mine);
  __syncthreads();
  if (threadIdx.x == 0) {
    *correct = static_cast<int32_t>(count);
    *total = static_cast<int32_t>(rows);
    *accuracy = rows == 0 ? 0.0f : static_cast<float>(count) / static_cast<float>(rows);
  }
}

}  // namespace

template <typename T>
void top_k(const T* x, T* out, int64_t* indices, const TopKGeometry& g, Stream s) {
  const int64_t rows = g.outer * g.inner;
  if (rows > 0 && g.k > 0) top_k_kernel<T><<<grid_for(rows), kThreads, 0, s>>>(x, out, indices, g);
}

template <typename T>
void top_k_grad(const int64_t* indices, const T* dout, T* dx, const TopKGeometry& g, Stream s) {
  const int64_t n = g.outer * g.n * g.inner, picks = g.outer * g.k * g.inner;
  if (n > 0) fill<T>(dx, n, 0.0, s);
  if (picks > 0) top_k_grad_kernel<T><<<grid_for(picks), kThreads, 0, s>>>(indices, dout, dx, g);
}

void accuracy(const int64_t* indices, const void* label, bool label64, int64_t rows, int64_t k,
              float* accuracy, int32_t* correct, int32_t* total, Stream s) {
  accuracy_kernel<<<1, kThreads, 0, s>>>(indices, label, label64, rows, k, accuracy, correct,
                                         total);
}

template void top_k<float>(const float*, float*, int64_t*, const TopKGeometry&, Stream);
template void top_k<double>(const double*, double*, int64_t*, const TopKGeometry&, Stream);
template void top_k<int32_t>(const int32_t*, int32_t*, int64_t*, const TopKGeometry&, Stream);
template void top_k<int64_t>(const int64_t*, int64_t*, int64_t*, const TopKGeometry&, Stream);
template void top_k_grad<float>(const int64_t*, const float*, float*, const TopKGeometry&, Stream);
template void top_k_grad<double>(const int64_t*, const double*, double*, const TopKGeometry&,
                                 Stream);

}  // namespace ctp::cuda::launch
