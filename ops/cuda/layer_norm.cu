// layer_norm and its gradient on the GPU: one block per row, sums by a
// block-wide tree (so FP32 results differ from the CPU's sequential sums
// in the last bits), 16-bit elements computed in float.
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

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>(rows < 65535 * 16 ? rows : 65535 * 16);
}

}  // namespace

template <typename T, typename U>
void layer_norm(const T* x, const U* scale, const U* bias, T* y, U* mean, U* variance,
                int64_t rows, int64_t cols, double epsilon, Stream s) {
  if (rows <= 0 || cols <= 0) return;
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
  if (dx)
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
