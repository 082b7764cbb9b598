// layer_norm and its gradient on the GPU: one block per row, sums by a
// block-wide tree (so FP32 results differ from the CPU's sequential sums
// in the last bits), 16-bit elements computed in float; FP32 rows of up to
// 1024 columns in multiples of 128 a warp per row instead (sums by warp
// shuffles).
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "ops/cuda/block_sum.cuh"
#include "ops/cuda/device_math.cuh"
#include "ops/cuda/shape_device_kernels.h"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh

constexpr unsigned kRowThreads = 256;

template <typename T, typename U>
__global__ void layer_norm_kernel(const T* x, const U* scale, const U* bias, T* y, U* mean,
                                  U* variance, int64_t rows, int64_t cols, U epsilon) {
  __shared__ U shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * cols;
    U sum = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += U(widen(row[c]));
    const U mu = block_sum(sum, shared) / U(cols);
    U squares = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const U d = U(widen(row[c])) - mu;
      squares += d * d;
    }
    const U sigma2 = block_sum(squares, shared) / U(cols);
    const U rstd = U(1) / sqrt(sigma2 + epsilon);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      U v = (U(widen(row[c])) - mu) * rstd;
      if (scale) v *= scale[c];
      if (bias) v += bias[c];
      y[r * cols + c] = narrow<T>(v);
    }
    if (threadIdx.x == 0) {
      mean[r] = mu;
      variance[r] = sigma2;
    }
  }
}

template <typename T, typename U>
__global__ void layer_norm_dx_kernel(const T* x, const U* scale, const U* mean,
                                     const U* variance, const T* dy, T* dx, int64_t rows,
                                     int64_t cols, U epsilon) {
  __shared__ U shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const U mu = mean[r], rstd = U(1) / sqrt(variance[r] + epsilon);
    U sum_g = 0, sum_gx = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const int64_t at = r * cols + c;
      const U g = scale ? U(widen(dy[at])) * scale[c] : U(widen(dy[at]));
      sum_g += g;
      sum_gx += g * (U(widen(x[at])) - mu) * rstd;
    }
    const U mean_g = block_sum(sum_g, shared) / U(cols);
    const U mean_gx = block_sum(sum_gx, shared) / U(cols);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const int64_t at = r * cols + c;
      const U g = scale ? U(widen(dy[at])) * scale[c] : U(widen(dy[at]));
      const U xhat = (U(widen(x[at])) - mu) * rstd;
      dx[at] = narrow<T>(rstd * (g - mean_g - xhat * mean_gx));
    }
  }
}

// dScale and dBias in two passes, each of many blocks: a block per 32
// columns x kChunkRows rows sums its rows into one partial per column
// (kGroups rows of threads, each summing every kGroups-th row of the chunk,
// a warp reading 32 adjacent columns of a row; the groups then added in
// group order), then a block per 32 columns adds the chunks' partials in
// chunk order: the same result every run. A block per 32 columns summing
// every row (32 blocks for BERT's 1024 columns, each thread 128 rows one
// after the other, waiting on each load) made layer_norm_grad 4.44 ms of
// BERT-large's bf16 step on an H200 (49 ops); with the chunks 2.38 ms, the
// chunk pass 20 us an op (bench/RESULTS.md, session 16).
constexpr unsigned kGroups = 8;
constexpr int64_t kChunkRows = 128;

// Adds the kGroups partial sums of each column (threadIdx.y = group) in
// group order; group 0's threads get the total.
template <typename U>
__device__ inline void sum_groups(U& ds, U& db) {
  __shared__ U ds_part[kGroups][33], db_part[kGroups][33];
  ds_part[threadIdx.y][threadIdx.x] = ds;
  db_part[threadIdx.y][threadIdx.x] = db;
  __syncthreads();
  if (threadIdx.y == 0)
    for (unsigned y = 1; y < kGroups; ++y) {
      ds += ds_part[y][threadIdx.x];
      db += db_part[y][threadIdx.x];
    }
}

template <typename T, typename U>
__global__ void layer_norm_dparams_chunk_kernel(const T* x, const U* mean, const U* variance,
                                                const T* dy, U* partials, int64_t rows,
                                                int64_t cols, U epsilon) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * kChunkRows;
  const int64_t end = first + kChunkRows < rows ? first + kChunkRows : rows;
  U ds = 0, db = 0;
  if (c < cols)
#pragma unroll 4
    for (int64_t r = first + threadIdx.y; r < end; r += kGroups) {
      const int64_t at = r * cols + c;
      const U g = U(widen(dy[at]));
      ds += g * (U(widen(x[at])) - mean[r]) * (U(1) / sqrt(variance[r] + epsilon));
      db += g;
    }
  sum_groups(ds, db);
  if (threadIdx.y == 0 && c < cols) {
    // partials: [2][chunks][cols], dScale's then dBias's.
    const int64_t chunks = gridDim.y;
    partials[blockIdx.y * cols + c] = ds;
    partials[(chunks + blockIdx.y) * cols + c] = db;
  }
}

template <typename U>
__global__ void layer_norm_dparams_sum_kernel(const U* partials, int64_t chunks, int64_t cols,
                                              U* dscale, U* dbias) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  U ds = 0, db = 0;
  if (c < cols)
    for (int64_t k = threadIdx.y; k < chunks; k += kGroups) {
      ds += partials[k * cols + c];
      db += partials[(chunks + k) * cols + c];
    }
  sum_groups(ds, db);
  if (threadIdx.y == 0 && c < cols) {
    if (dscale) dscale[c] = ds;
    if (dbias) dbias[c] = db;
  }
}

// FP32 rows of 128 to 1024 columns (a multiple of 128: BERT's 1024), a warp
// per row holding it in registers, kVecs float4 a lane: the row is read
// once (the block-per-row kernels above read it two or three times and
// wait at a block barrier per sum), and the sums are warp shuffles. On an
// H200 layer_norm took 21 us and its dX 23 us per [4096, 1024] op, where one
// pass over the bytes takes 8 and 12 (bench/RESULTS.md, session 16).
constexpr int kRowWarps = 8;  // rows per block

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline float4 load4(const float* row, int lane, int i) {
  return reinterpret_cast<const float4*>(row)[lane + 32 * i];
}

template <int kVecs>
__global__ void __launch_bounds__(32 * kRowWarps)
    layer_norm_warp_kernel(const float* x, const float* scale, const float* bias, float* y,
                           float* mean, float* variance, int64_t rows, int64_t cols,
                           float epsilon) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kRowWarps + threadIdx.x / 32;
  if (r >= rows) return;
  float v[kVecs][4];
  float sum = 0;
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const float4 a = load4(x + r * cols, lane, i);
    v[i][0] = a.x, v[i][1] = a.y, v[i][2] = a.z, v[i][3] = a.w;
    sum += (a.x + a.y) + (a.z + a.w);
  }
  const float mu = warp_sum(sum) / static_cast<float>(cols);
  float squares = 0;
#pragma unroll
  for (int i = 0; i < kVecs; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) squares += (v[i][e] - mu) * (v[i][e] - mu);
  const float sigma2 = warp_sum(squares) / static_cast<float>(cols);
  const float rstd = 1.0f / sqrtf(sigma2 + epsilon);
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int c = 4 * (lane + 32 * i);
    float out[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      out[e] = (v[i][e] - mu) * rstd;
      if (scale) out[e] *= scale[c + e];
      if (bias) out[e] += bias[c + e];
    }
    reinterpret_cast<float4*>(y + r * cols)[lane + 32 * i] =
        make_float4(out[0], out[1], out[2], out[3]);
  }
  if (lane == 0) {
    mean[r] = mu;
    variance[r] = sigma2;
  }
}

template <int kVecs>
__global__ void __launch_bounds__(32 * kRowWarps)
    layer_norm_dx_warp_kernel(const float* x, const float* scale, const float* mean,
                              const float* variance, const float* dy, float* dx, int64_t rows,
                              int64_t cols, float epsilon) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kRowWarps + threadIdx.x / 32;
  if (r >= rows) return;
  const float mu = mean[r], rstd = 1.0f / sqrtf(variance[r] + epsilon);
  float g[kVecs][4], xhat[kVecs][4];
  float sum_g = 0, sum_gx = 0;
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const float4 d = load4(dy + r * cols, lane, i), a = load4(x + r * cols, lane, i);
    const float ds[4] = {d.x, d.y, d.z, d.w}, xs[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      g[i][e] = scale ? ds[e] * scale[4 * (lane + 32 * i) + e] : ds[e];
      xhat[i][e] = (xs[e] - mu) * rstd;
      sum_g += g[i][e];
      sum_gx += g[i][e] * xhat[i][e];
    }
  }
  const float mean_g = warp_sum(sum_g) / static_cast<float>(cols);
  const float mean_gx = warp_sum(sum_gx) / static_cast<float>(cols);
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    float out[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) out[e] = rstd * (g[i][e] - mean_g - xhat[i][e] * mean_gx);
    reinterpret_cast<float4*>(dx + r * cols)[lane + 32 * i] =
        make_float4(out[0], out[1], out[2], out[3]);
  }
}

// The float4 count a lane holds for a warp-per-row kernel, or 0 where the
// block-per-row kernels run (other dtypes, columns, or unaligned rows).
template <typename T>
int row_vecs(int64_t cols, std::initializer_list<const void*> tensors) {
  if (!std::is_same_v<T, float> || cols % 128 != 0 || cols > 1024) return 0;
  for (const void* t : tensors)
    if (reinterpret_cast<uintptr_t>(t) % 16 != 0) return 0;
  return static_cast<int>(cols / 128);
}

// Calls f(std::integral_constant<int, V>) for V = vecs (1 .. 8).
template <typename F>
void with_vecs(int vecs, F&& f) {
  switch (vecs) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    case 5: f(std::integral_constant<int, 5>{}); break;
    case 6: f(std::integral_constant<int, 6>{}); break;
    case 7: f(std::integral_constant<int, 7>{}); break;
    default: f(std::integral_constant<int, 8>{}); break;
  }
}

unsigned warp_row_blocks(int64_t rows) {
  return static_cast<unsigned>((rows + kRowWarps - 1) / kRowWarps);
}

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>(rows < 65535 * 16 ? rows : 65535 * 16);
}

}  // namespace

template <typename T, typename U>
void layer_norm(const T* x, const U* scale, const U* bias, T* y, U* mean, U* variance,
                int64_t rows, int64_t cols, double epsilon, Stream s) {
  if (rows <= 0 || cols <= 0) return;
  if constexpr (std::is_same_v<T, float>) {
    if (const int vecs = row_vecs<T>(cols, {x, y});
        vecs > 0 && rows < (int64_t{1} << 31) * kRowWarps) {
      with_vecs(vecs, [&](auto v) {
        layer_norm_warp_kernel<decltype(v)::value>
            <<<warp_row_blocks(rows), 32 * kRowWarps, 0, s>>>(x, scale, bias, y, mean, variance,
                                                             rows, cols,
                                                             static_cast<float>(epsilon));
      });
      return;
    }
  }
  layer_norm_kernel<T, U><<<row_blocks(rows), kRowThreads, 0, s>>>(
      x, scale, bias, y, mean, variance, rows, cols, static_cast<U>(epsilon));
}

int64_t layer_norm_grad_scratch(int64_t rows, int64_t cols) {
  return 2 * ((rows + kChunkRows - 1) / kChunkRows) * cols;
}

template <typename T, typename U>
void layer_norm_grad(const T* x, const U* scale, const U* mean, const U* variance, const T* dy,
                     T* dx, U* dscale, U* dbias, U* scratch, int64_t rows, int64_t cols,
                     double epsilon, Stream s) {
  if (rows <= 0 || cols <= 0) return;
  const U eps = static_cast<U>(epsilon);
  bool dx_done = !dx;
  if constexpr (std::is_same_v<T, float>) {
    if (const int vecs = row_vecs<T>(cols, {x, dy, dx});
        !dx_done && vecs > 0 && rows < (int64_t{1} << 31) * kRowWarps) {
      with_vecs(vecs, [&](auto v) {
        layer_norm_dx_warp_kernel<decltype(v)::value>
            <<<warp_row_blocks(rows), 32 * kRowWarps, 0, s>>>(x, scale, mean, variance, dy, dx,
                                                             rows, cols, eps);
      });
      dx_done = true;
    }
  }
  if (!dx_done)
    layer_norm_dx_kernel<T, U><<<row_blocks(rows), kRowThreads, 0, s>>>(
        x, scale, mean, variance, dy, dx, rows, cols, eps);
  if (dscale || dbias) {
    const auto column_blocks = static_cast<unsigned>((cols + 31) / 32);
    const int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
    layer_norm_dparams_chunk_kernel<T, U>
        <<<dim3(column_blocks, static_cast<unsigned>(chunks)), dim3(32, kGroups), 0, s>>>(
            x, mean, variance, dy, scratch, rows, cols, eps);
    layer_norm_dparams_sum_kernel<U><<<column_blocks, dim3(32, kGroups), 0, s>>>(
        scratch, chunks, cols, dscale, dbias);
  }
}

#define CTP_INSTANTIATE_LAYER_NORM(T, U)                                                     \
  template void layer_norm<T, U>(const T*, const U*, const U*, T*, U*, U*, int64_t, int64_t, \
                                 double, Stream);                                            \
  template void layer_norm_grad<T, U>(const T*, const U*, const U*, const U*, const T*, T*,  \
                                      U*, U*, U*, int64_t, int64_t, double, Stream);

CTP_INSTANTIATE_LAYER_NORM(float, float)
CTP_INSTANTIATE_LAYER_NORM(double, double)
CTP_INSTANTIATE_LAYER_NORM(Half, float)
CTP_INSTANTIATE_LAYER_NORM(BFloat16, float)

}  // namespace ctp::cuda::launch
