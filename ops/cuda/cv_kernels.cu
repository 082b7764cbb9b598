// pool2d, batch_norm and plane copies on the GPU (ops/cuda/cv_device_kernels.h),
// with the CPU kernels' window arithmetic and formulas: pool2d sums and
// gradients add in the CPU's order (so FP32 results agree bit for bit);
// batch_norm's per-channel sums are tree reductions (within rounding).
#include <cfloat>

#include "ops/cuda/cv_device_kernels.h"
#include "ops/cuda/device_math.cuh"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh

// The input cells [start, end) of output cell o along dim d, and the extent
// a non-exclusive avg divides by (ops/cpu/pool_kernels.cc, span_of).
struct Span {
  int64_t start, end, extent;
};
__device__ inline Span span_of(const PoolGeometry& g, int d, int64_t o) {
  const int64_t in = d == 0 ? g.in_h : g.in_w;
  const int64_t out = d == 0 ? g.out_h : g.out_w;
  if (g.adaptive) {
    const int64_t start = o * in / out, end = ((o + 1) * in + out - 1) / out;
    return {start, end, end - start};
  }
  const int64_t start = o * g.stride[d] - g.pad_before[d];
  const int64_t end = min(start + g.kernel[d], in + g.pad_before[d]);
  return {max(start, int64_t{0}), min(end, in), end - start};
}

__device__ inline int64_t divisor_of(const PoolGeometry& g, Span h, Span w) {
  const int64_t cells = (h.end - h.start) * (w.end - w.start);
  return g.exclusive || g.adaptive ? cells : h.extent * w.extent;
}

template <typename C> __device__ inline C lowest();
template <> __device__ inline float lowest<float>() { return -FLT_MAX; }
template <> __device__ inline double lowest<double>() { return -DBL_MAX; }

template <typename T>
__global__ void pool2d_kernel(const T* x, T* out, PoolGeometry g) {
  using C = Compute<T>;
  const int64_t cells = g.out_h * g.out_w, n = g.planes * cells;
  for (int64_t at = first_index(); at < n; at += grid_stride()) {
    const int64_t plane = at / cells, oh = at % cells / g.out_w, ow = at % g.out_w;
    const Span h = span_of(g, 0, oh), w = span_of(g, 1, ow);
    const T* in = x + plane * g.in_h * g.in_w;
    C acc = g.max ? lowest<C>() : C(0);
    for (int64_t i = h.start; i < h.end; ++i)
      for (int64_t j = w.start; j < w.end; ++j) {
        const C v = widen(in[i * g.in_w + j]);
        acc = g.max ? (acc < v ? v : acc) : add_rn(acc, v);
      }
    out[at] = narrow<T>(g.max ? acc : acc / static_cast<C>(divisor_of(g, h, w)));
  }
}

// The outputs [lo, hi) whose windows may read input cell `i` along dim d.
__device__ inline void covering(const PoolGeometry& g, int d, int64_t i, int64_t& lo,
                                int64_t& hi) {
  const int64_t out = d == 0 ? g.out_h : g.out_w;
  if (g.adaptive) {
    lo = 0;
    hi = out;
    return;
  }
  const int64_t shifted = i + g.pad_before[d];
  lo = shifted < g.kernel[d] ? 0 : (shifted - g.kernel[d]) / g.stride[d] + 1;
  hi = min(shifted / g.stride[d] + 1, out);
}

template <typename T>
__global__ void pool2d_grad_kernel(const T* x, const T* out, const T* dout, T* dx,
                                   PoolGeometry g) {
  using C = Compute<T>;
  const int64_t in_cells = g.in_h * g.in_w, out_cells = g.out_h * g.out_w;
  const int64_t n = g.planes * in_cells;
  for (int64_t at = first_index(); at < n; at += grid_stride()) {
    const int64_t plane = at / in_cells, ih = at % in_cells / g.in_w, iw = at % g.in_w;
    const T* in = x + plane * in_cells;
    int64_t h_lo, h_hi, w_lo, w_hi;
    covering(g, 0, ih, h_lo, h_hi);
    covering(g, 1, iw, w_lo, w_hi);
    C acc = 0;
    for (int64_t oh = h_lo; oh < h_hi; ++oh) {
      const Span h = span_of(g, 0, oh);
      if (ih < h.start || ih >= h.end) continue;
      for (int64_t ow = w_lo; ow < w_hi; ++ow) {
        const Span w = span_of(g, 1, ow);
        if (iw < w.start || iw >= w.end) continue;
        const int64_t o = plane * out_cells + oh * g.out_w + ow;
        const C grad = widen(dout[o]);
        if (!g.max) {
          acc = add_rn(acc, grad / static_cast<C>(divisor_of(g, h, w)));
          continue;
        }
        const C top = widen(out[o]);
        if (widen(in[ih * g.in_w + iw]) != top) continue;
        bool first = true;  // the window's first maximum (adaptive: every one)
        for (int64_t i = h.start; i < h.end && first && !g.adaptive; ++i)
          for (int64_t j = w.start; j < w.end; ++j) {
            if (i == ih && j == iw) {
              i = h.end;  // reached this cell first
              break;
            }
            if (widen(in[i * g.in_w + j]) == top) {
              first = false;
              break;
            }
          }
        if (first) acc = add_rn(acc, grad);
      }
    }
    dx[at] = narrow<T>(acc);
  }
}

template <typename T>
__global__ void copy_planes_kernel(const T* src, T* dst, PlaneCopy c) {
  const int64_t block = c.rows * c.cols, n = c.planes * block;
  for (int64_t at = first_index(); at < n; at += grid_stride()) {
    const int64_t plane = at / block, r = at % block / c.cols, col = at % c.cols;
    dst[(plane * c.dst_h + c.dst_row + r) * c.dst_w + c.dst_col + col] =
        src[(plane * c.src_h + c.src_row + r) * c.src_w + c.src_col + col];
  }
}

// Element i of channel c (the channel's elements in [outer, inner] order).
__device__ inline int64_t channel_element(const BatchNormGeometry& g, int64_t c, int64_t i) {
  return (i / g.inner * g.channels + c) * g.inner + i % g.inner;
}

// The block's sum of v (every thread's share), returned to every thread.
template <typename A>
__device__ A block_sum(A v) {
  __shared__ A partial[kThreads];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] = add_rn(partial[threadIdx.x], partial[threadIdx.x + half]);
    __syncthreads();
  }
  const A total = partial[0];
  __syncthreads();
  return total;
}

// One block per channel: the statistics and the running ones.
template <typename T>
__global__ void batch_norm_stats_kernel(const T* x, const T* running_mean, const T* running_var,
                                        T* mean_out, T* var_out, T* saved_mean,
                                        T* saved_inv_std, BatchNormGeometry g) {
  const int64_t c = blockIdx.x, count = g.outer * g.inner;
  T mean = running_mean[c], var = running_var[c];
  if (g.batch_stats) {
    T sum = 0, squares = 0;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) sum = add_rn(sum, x[channel_element(g, c, i)]);
    mean = block_sum(sum) / static_cast<T>(count);
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
      const T d = x[channel_element(g, c, i)] - mean;
      squares = add_rn(squares, mul_rn(d, d));
    }
    var = block_sum(squares) / static_cast<T>(count);
  }
  if (threadIdx.x != 0) return;
  const T momentum = static_cast<T>(g.momentum);
  if (g.batch_stats) {
    mean_out[c] = add_rn(mul_rn(running_mean[c], momentum), mul_rn(mean, T(1) - momentum));
    var_out[c] = add_rn(mul_rn(running_var[c], momentum), mul_rn(var, T(1) - momentum));
  } else {
    mean_out[c] = mean;
    var_out[c] = var;
  }
  saved_mean[c] = mean;
  saved_inv_std[c] = T(1) / sqrt(var + static_cast<T>(g.epsilon));
}

template <typename T>
__global__ void batch_norm_apply_kernel(const T* x, const T* scale, const T* bias, const T* mean,
                                        const T* inv_std, T* y, BatchNormGeometry g) {
  const int64_t n = g.outer * g.channels * g.inner;
  for (int64_t at = first_index(); at < n; at += grid_stride()) {
    const int64_t c = at / g.inner % g.channels;
    y[at] = add_rn(mul_rn(mul_rn(x[at] - mean[c], inv_std[c]), scale[c]), bias[c]);
  }
}

// One block per channel: dScale = sum(dY * x_hat), dBias = sum(dY).
template <typename T>
__global__ void batch_norm_grad_sums_kernel(const T* x, const T* mean, const T* spread,
                                            const T* dy, T* dscale, T* dbias,
                                            BatchNormGeometry g) {
  const int64_t c = blockIdx.x, count = g.outer * g.inner;
  const T inv_std = g.batch_stats ? spread[c] : T(1) / sqrt(spread[c] + static_cast<T>(g.epsilon));
  T sum_dy = 0, sum_dy_xhat = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    const int64_t at = channel_element(g, c, i);
    sum_dy = add_rn(sum_dy, dy[at]);
    sum_dy_xhat = add_rn(sum_dy_xhat, mul_rn(mul_rn(dy[at], x[at] - mean[c]), inv_std));
  }
  sum_dy = block_sum(sum_dy);
  sum_dy_xhat = block_sum(sum_dy_xhat);
  if (threadIdx.x == 0) {
    dbias[c] = sum_dy;
    dscale[c] = sum_dy_xhat;
  }
}

template <typename T>
__global__ void batch_norm_grad_x_kernel(const T* x, const T* scale, const T* mean,
                                         const T* spread, const T* dy, const T* dscale,
                                         const T* dbias, T* dx, BatchNormGeometry g) {
  const int64_t n = g.outer * g.channels * g.inner;
  const T count = static_cast<T>(g.outer * g.inner);
  for (int64_t at = first_index(); at < n; at += grid_stride()) {
    const int64_t c = at / g.inner % g.channels;
    const T inv_std =
        g.batch_stats ? spread[c] : T(1) / sqrt(spread[c] + static_cast<T>(g.epsilon));
    const T k = mul_rn(scale[c], inv_std);
    if (!g.batch_stats) {
      dx[at] = mul_rn(k, dy[at]);
      continue;
    }
    const T x_hat = mul_rn(x[at] - mean[c], inv_std);
    dx[at] = mul_rn(k, dy[at] - dbias[c] / count - mul_rn(x_hat, dscale[c]) / count);
  }
}

}  // namespace

template <typename T>
void pool2d(const T* x, T* out, const PoolGeometry& g, Stream s) {
  const int64_t n = g.planes * g.out_h * g.out_w;
  if (n > 0) pool2d_kernel<T><<<grid_for(n), kThreads, 0, s>>>(x, out, g);
}

template <typename T>
void pool2d_grad(const T* x, const T* out, const T* dout, T* dx, const PoolGeometry& g,
                 Stream s) {
  const int64_t n = g.planes * g.in_h * g.in_w;
  if (n > 0) pool2d_grad_kernel<T><<<grid_for(n), kThreads, 0, s>>>(x, out, dout, dx, g);
}

template <typename T>
void copy_planes(const T* src, T* dst, const PlaneCopy& c, Stream s) {
  const int64_t n = c.planes * c.rows * c.cols;
  if (n > 0) copy_planes_kernel<T><<<grid_for(n), kThreads, 0, s>>>(src, dst, c);
}

template <typename T>
void batch_norm(const T* x, const T* scale, const T* bias, const T* running_mean,
                const T* running_var, T* y, T* mean_out, T* var_out, T* saved_mean,
                T* saved_inv_std, const BatchNormGeometry& g, Stream s) {
  if (g.channels <= 0) return;
  batch_norm_stats_kernel<T><<<static_cast<unsigned>(g.channels), kThreads, 0, s>>>(
      x, running_mean, running_var, mean_out, var_out, saved_mean, saved_inv_std, g);
  const int64_t n = g.outer * g.channels * g.inner;
  if (n > 0)
    batch_norm_apply_kernel<T><<<grid_for(n), kThreads, 0, s>>>(x, scale, bias, saved_mean,
                                                                saved_inv_std, y, g);
}

template <typename T>
void batch_norm_grad(const T* x, const T* scale, const T* mean, const T* spread, const T* dy,
                     T* dx, T* dscale, T* dbias, const BatchNormGeometry& g, Stream s) {
  if (g.channels <= 0) return;
  batch_norm_grad_sums_kernel<T><<<static_cast<unsigned>(g.channels), kThreads, 0, s>>>(
      x, mean, spread, dy, dscale, dbias, g);
  const int64_t n = g.outer * g.channels * g.inner;
  if (dx && n > 0)
    batch_norm_grad_x_kernel<T><<<grid_for(n), kThreads, 0, s>>>(x, scale, mean, spread, dy,
                                                                 dscale, dbias, dx, g);
}

#define CTP_INSTANTIATE_POOL(T)                                                         \
  template void pool2d<T>(const T*, T*, const PoolGeometry&, Stream);                  \
  template void pool2d_grad<T>(const T*, const T*, const T*, T*, const PoolGeometry&, \
                               Stream);                                                \
  template void copy_planes<T>(const T*, T*, const PlaneCopy&, Stream);
#define CTP_INSTANTIATE_BATCH_NORM(T)                                                       \
  template void batch_norm<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, \
                              T*, T*, const BatchNormGeometry&, Stream);                    \
  template void batch_norm_grad<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, \
                                   T*, const BatchNormGeometry&, Stream);

CTP_INSTANTIATE_POOL(float)
CTP_INSTANTIATE_POOL(double)
CTP_INSTANTIATE_POOL(Half)
CTP_INSTANTIATE_POOL(BFloat16)
CTP_INSTANTIATE_BATCH_NORM(float)
CTP_INSTANTIATE_BATCH_NORM(double)

}  // namespace ctp::cuda::launch
