// pool2d, batch_norm and plane copies on the GPU (ops/cuda/cv_device_kernels.h),
// with the CPU kernels' window arithmetic and formulas: pool2d sums and
// gradients add in the CPU's order (so FP32 results agree bit for bit);
// batch_norm's per-channel sums are split over blocks, then added in block order
// (16-bit X: elements computed in float, statistics in FP32).
#include <algorithm>
#include <cfloat>

#include "ops/cuda/cv_device_kernels.h"
#include "ops/cuda/device_math.cuh"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh

// PoolGeometry in the kernels' index type I: 32-bit unsigned where every
// index fits (its divisions and remainders cost a fraction of 64-bit ones,
// which dominated pool2d_grad: 2.3 ms on ResNet-50's first pool, bf16 batch
// 64, on an H100), else int64_t. Window starts may fall before the input
// (paddings), so those stay signed: W is I's signed twin.
template <typename I>
struct Geometry {
  using W = std::make_signed_t<I>;
  I planes, in_h, in_w, out_h, out_w;
  W kernel[2], stride[2], pad_before[2];
  bool max, adaptive, exclusive;
  explicit Geometry(const PoolGeometry& g)
      : planes(static_cast<I>(g.planes)), in_h(static_cast<I>(g.in_h)),
        in_w(static_cast<I>(g.in_w)), out_h(static_cast<I>(g.out_h)),
        out_w(static_cast<I>(g.out_w)), max(g.max), adaptive(g.adaptive),
        exclusive(g.exclusive) {
    for (int d = 0; d < 2; ++d) {
      kernel[d] = static_cast<W>(g.kernel[d]);
      stride[d] = static_cast<W>(g.stride[d]);
      pad_before[d] = static_cast<W>(g.pad_before[d]);
    }
  }
};

// Whether every index of the pool (and a grid stride past the last) fits
// in 32 bits, signed window arithmetic included.
bool fits_32_bits(const PoolGeometry& g) {
  const int64_t limit = int64_t{1} << 30;
  return g.planes * g.in_h * g.in_w < limit && g.planes * g.out_h * g.out_w < limit &&
         g.in_h + 2 * g.pad_before[0] + g.kernel[0] < limit &&
         g.in_w + 2 * g.pad_before[1] + g.kernel[1] < limit;
}

// The input cells [start, end) of output cell o along dim d, and the extent
// a non-exclusive avg divides by (ops/cpu/pool_kernels.cc, span_of).
template <typename W>
struct Span {
  W start, end, extent;
};
template <typename I, typename W = std::make_signed_t<I>>
__device__ inline Span<W> span_of(const Geometry<I>& g, int d, W o) {
  const W in = static_cast<W>(d == 0 ? g.in_h : g.in_w);
  const W out = static_cast<W>(d == 0 ? g.out_h : g.out_w);
  if (g.adaptive) {
    const W start = o * in / out, end = ((o + 1) * in + out - 1) / out;
    return {start, end, end - start};
  }
  const W start = o * g.stride[d] - g.pad_before[d];
  const W end = min(start + g.kernel[d], in + g.pad_before[d]);
  return {max(start, W{0}), min(end, in), end - start};
}

template <typename I, typename W>
__device__ inline W divisor_of(const Geometry<I>& g, Span<W> h, Span<W> w) {
  const W cells = (h.end - h.start) * (w.end - w.start);
  return g.exclusive || g.adaptive ? cells : h.extent * w.extent;
}

template <typename C> __device__ inline C lowest();
template <> __device__ inline float lowest<float>() { return -FLT_MAX; }
template <> __device__ inline double lowest<double>() { return -DBL_MAX; }

template <typename T, typename I>
__global__ void pool2d_kernel(const T* x, T* out, Geometry<I> g) {
  using C = Compute<T>;
  using W = std::make_signed_t<I>;
  const I cells = g.out_h * g.out_w, n = g.planes * cells;
  for (I at = static_cast<I>(first_index()); at < n; at += static_cast<I>(grid_stride())) {
    const I plane = at / cells, oh = at % cells / g.out_w, ow = at % g.out_w;
    const Span<W> h = span_of(g, 0, static_cast<W>(oh)), w = span_of(g, 1, static_cast<W>(ow));
    const T* in = x + static_cast<int64_t>(plane) * g.in_h * g.in_w;
    C acc = g.max ? lowest<C>() : C(0);
    for (W i = h.start; i < h.end; ++i)
      for (W j = w.start; j < w.end; ++j) {
        const C v = widen(in[i * static_cast<W>(g.in_w) + j]);
        acc = g.max ? (acc < v ? v : acc) : add_rn(acc, v);
      }
    out[at] = narrow<T>(g.max ? acc : acc / static_cast<C>(divisor_of(g, h, w)));
  }
}

// The outputs [lo, hi) whose windows may read input cell `i` along dim d.
template <typename I, typename W>
__device__ inline void covering(const Geometry<I>& g, int d, W i, W& lo, W& hi) {
  const W out = static_cast<W>(d == 0 ? g.out_h : g.out_w);
  if (g.adaptive) {
    lo = 0;
    hi = out;
    return;
  }
  const W shifted = i + g.pad_before[d];
  lo = shifted < g.kernel[d] ? 0 : (shifted - g.kernel[d]) / g.stride[d] + 1;
  hi = min(shifted / g.stride[d] + 1, out);
}

// Whether input cell (ih, iw) is the first maximum of the window (h, w) in
// the CPU's scan order (adaptive windows: every maximum counts).
template <typename T, typename W, typename C>
__device__ inline bool first_maximum(const T* in, W in_w, Span<W> h, Span<W> w, W ih, W iw,
                                     C top, bool adaptive) {
  if (adaptive) return true;
  for (W i = h.start; i <= ih; ++i)
    for (W j = w.start; j < w.end; ++j) {
      if (i == ih && j == iw) return true;
      if (widen(in[i * in_w + j]) == top) return false;
    }
  return true;
}

template <typename T, typename I>
__global__ void pool2d_grad_kernel(const T* x, const T* out, const T* dout, T* dx,
                                   Geometry<I> g) {
  using C = Compute<T>;
  using W = std::make_signed_t<I>;
  const I in_cells = g.in_h * g.in_w, out_cells = g.out_h * g.out_w;
  const I n = g.planes * in_cells;
  for (I at = static_cast<I>(first_index()); at < n; at += static_cast<I>(grid_stride())) {
    const I plane = at / in_cells;
    const W ih = static_cast<W>(at % in_cells / g.in_w), iw = static_cast<W>(at % g.in_w);
    const T* in = x + static_cast<int64_t>(plane) * in_cells;
    W h_lo, h_hi, w_lo, w_hi;
    covering(g, 0, ih, h_lo, h_hi);
    covering(g, 1, iw, w_lo, w_hi);
    const C self = g.max ? widen(in[ih * static_cast<W>(g.in_w) + iw]) : C(0);
    C acc = 0;
    for (W oh = h_lo; oh < h_hi; ++oh) {
      const Span<W> h = span_of(g, 0, oh);
      if (ih < h.start || ih >= h.end) continue;
      for (W ow = w_lo; ow < w_hi; ++ow) {
        const Span<W> w = span_of(g, 1, ow);
        if (iw < w.start || iw >= w.end) continue;
        const I o = plane * out_cells + static_cast<I>(oh) * g.out_w + static_cast<I>(ow);
        const C grad = widen(dout[o]);
        if (!g.max) {
          acc = add_rn(acc, grad / static_cast<C>(divisor_of(g, h, w)));
          continue;
        }
        const C top = widen(out[o]);
        if (self == top &&
            first_maximum(in, static_cast<W>(g.in_w), h, w, ih, iw, top, g.adaptive))
          acc = add_rn(acc, grad);
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

// How a channel's [outer, inner] elements are split over blocks: `splits`
// blocks per channel, block s taking planes [s * outer / splits, ...). Enough
// blocks to fill the GPU when channels are few, none with under 8K elements.
int64_t splits_of(const BatchNormGeometry& g) {
  const int64_t by_size = g.outer * g.inner / 8192;
  const int64_t by_grid = 2048 / (g.channels > 0 ? g.channels : 1);
  return std::max<int64_t>(1, std::min({by_size, by_grid, g.outer}));
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

// Block (c, s) of grid [channels * splits]: its planes of channel c.
struct ChannelPart {
  int64_t c, first_plane, end_plane;
};
__device__ inline ChannelPart channel_part(const BatchNormGeometry& g, int64_t splits) {
  const int64_t c = blockIdx.x / splits, s = blockIdx.x % splits;
  return {c, s * g.outer / splits, (s + 1) * g.outer / splits};
}

// Calls visit(at) for each element of the block's part, spread over its
// threads: plane by plane when planes are as wide as the block (consecutive
// threads read consecutive elements), else over the part's flat range.
template <typename Visit>
__device__ inline void for_each_in_part(const BatchNormGeometry& g, const ChannelPart& p,
                                        Visit&& visit) {
  if (g.inner >= blockDim.x) {
    for (int64_t o = p.first_plane; o < p.end_plane; ++o) {
      const int64_t base = (o * g.channels + p.c) * g.inner;
      for (int64_t j = threadIdx.x; j < g.inner; j += blockDim.x) visit(base + j);
    }
    return;
  }
  const int64_t end = p.end_plane * g.inner;
  for (int64_t i = p.first_plane * g.inner + threadIdx.x; i < end; i += blockDim.x) {
    const int64_t o = i / g.inner;
    visit((o * g.channels + p.c) * g.inner + (i - o * g.inner));
  }
}

// Partial sums of x (pass 0) or of (x - mean)^2 (pass 1) per block.
template <typename T, typename U>
__global__ void batch_norm_sum_kernel(const T* x, const U* mean, U* partials, int64_t splits,
                                      BatchNormGeometry g) {
  const ChannelPart p = channel_part(g, splits);
  const U m = mean ? mean[p.c] : U(0);
  U sum = 0;
  if (mean) {
    for_each_in_part(g, p, [&](int64_t at) {
      const U d = U(widen(x[at])) - m;
      sum = add_rn(sum, mul_rn(d, d));
    });
  } else {
    for_each_in_part(g, p, [&](int64_t at) { sum = add_rn(sum, U(widen(x[at]))); });
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

// The channel's total of its blocks' partial sums, in block order.
template <typename T>
__device__ T channel_total(const T* partials, int64_t c, int64_t splits) {
  T total = 0;
  for (int64_t s = 0; s < splits; ++s) total = add_rn(total, partials[c * splits + s]);
  return total;
}

template <typename T>
__global__ void batch_norm_mean_kernel(const T* partials, T* saved_mean, int64_t splits,
                                       BatchNormGeometry g) {
  const int64_t c = first_index();
  if (c >= g.channels) return;
  saved_mean[c] = channel_total(partials, c, splits) / static_cast<T>(g.outer * g.inner);
}

// Per channel: the variance (batch or running), the running statistics and
// 1 / std. With batch statistics, saved_mean holds the batch mean already.
template <typename T>
__global__ void batch_norm_stats_kernel(const T* partials, const T* running_mean,
                                        const T* running_var, T* mean_out, T* var_out,
                                        T* saved_mean, T* saved_inv_std, int64_t splits,
                                        BatchNormGeometry g) {
  const int64_t c = first_index();
  if (c >= g.channels) return;
  T mean = running_mean[c], var = running_var[c];
  const T momentum = static_cast<T>(g.momentum);
  if (g.batch_stats) {
    mean = saved_mean[c];
    var = channel_total(partials, c, splits) / static_cast<T>(g.outer * g.inner);
    mean_out[c] = add_rn(mul_rn(running_mean[c], momentum), mul_rn(mean, T(1) - momentum));
    var_out[c] = add_rn(mul_rn(running_var[c], momentum), mul_rn(var, T(1) - momentum));
  } else {
    mean_out[c] = mean;
    var_out[c] = var;
  }
  saved_mean[c] = mean;
  saved_inv_std[c] = T(1) / sqrt(var + static_cast<T>(g.epsilon));
}

// The channel of flat element `at`: 32-bit arithmetic where the tensor allows
// (a 64-bit division costs several times a 32-bit one).
template <typename I>
__device__ inline I channel_of(I at, const BatchNormGeometry& g) {
  return at / static_cast<I>(g.inner) % static_cast<I>(g.channels);
}

template <typename T, typename U, typename I>
__global__ void batch_norm_apply_kernel(const T* x, const U* scale, const U* bias, const U* mean,
                                        const U* inv_std, T* y, BatchNormGeometry g) {
  const I n = static_cast<I>(g.outer * g.channels * g.inner);
  for (I at = static_cast<I>(first_index()); at < n; at += static_cast<I>(grid_stride())) {
    const I c = channel_of(at, g);
    y[at] = narrow<T>(
        add_rn(mul_rn(mul_rn(U(widen(x[at])) - mean[c], inv_std[c]), scale[c]), bias[c]));
  }
}

// Partial sums per block: sum(dY) to partials[0 ..), sum(dY * x_hat) to
// partials[blocks ..).
template <typename T, typename U>
__global__ void batch_norm_grad_sum_kernel(const T* x, const U* mean, const U* spread,
                                           const T* dy, U* partials, int64_t splits,
                                           BatchNormGeometry g) {
  const ChannelPart p = channel_part(g, splits);
  const U m = mean[p.c];
  const U inv_std =
      g.batch_stats ? spread[p.c] : U(1) / sqrt(spread[p.c] + static_cast<U>(g.epsilon));
  U sum_dy = 0, sum_dy_xhat = 0;
  for_each_in_part(g, p, [&](int64_t at) {
    const U d = U(widen(dy[at]));
    sum_dy = add_rn(sum_dy, d);
    sum_dy_xhat = add_rn(sum_dy_xhat, mul_rn(mul_rn(d, U(widen(x[at])) - m), inv_std));
  });
  sum_dy = block_sum(sum_dy);
  sum_dy_xhat = block_sum(sum_dy_xhat);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = sum_dy;
    partials[gridDim.x + blockIdx.x] = sum_dy_xhat;
  }
}

template <typename T>
__global__ void batch_norm_grad_total_kernel(const T* partials, T* dscale, T* dbias,
                                             int64_t splits, BatchNormGeometry g) {
  const int64_t c = first_index();
  if (c >= g.channels) return;
  dbias[c] = channel_total(partials, c, splits);
  dscale[c] = channel_total(partials + g.channels * splits, c, splits);
}

template <typename T, typename U, typename I>
__global__ void batch_norm_grad_x_kernel(const T* x, const U* scale, const U* mean,
                                         const U* spread, const T* dy, const U* dscale,
                                         const U* dbias, T* dx, BatchNormGeometry g) {
  const I n = static_cast<I>(g.outer * g.channels * g.inner);
  const U count = static_cast<U>(g.outer * g.inner);
  for (I at = static_cast<I>(first_index()); at < n; at += static_cast<I>(grid_stride())) {
    const I c = channel_of(at, g);
    const U inv_std =
        g.batch_stats ? spread[c] : U(1) / sqrt(spread[c] + static_cast<U>(g.epsilon));
    const U k = mul_rn(scale[c], inv_std);
    const U d = U(widen(dy[at]));
    if (!g.batch_stats) {
      dx[at] = narrow<T>(mul_rn(k, d));
      continue;
    }
    const U x_hat = mul_rn(U(widen(x[at])) - mean[c], inv_std);
    dx[at] = narrow<T>(mul_rn(k, d - dbias[c] / count - mul_rn(x_hat, dscale[c]) / count));
  }
}

__global__ void batch_norm_running_kernel(const float* saved_mean, const float* saved_inv_std,
                                          const float* running_mean, const float* running_var,
                                          float* mean_out, float* var_out, BatchNormGeometry g) {
  const int64_t c = first_index();
  if (c >= g.channels) return;
  const float momentum = static_cast<float>(g.momentum);
  const float inv_std = saved_inv_std[c];
  const float var = 1.0f / (inv_std * inv_std) - static_cast<float>(g.epsilon);
  mean_out[c] = add_rn(mul_rn(running_mean[c], momentum), mul_rn(saved_mean[c], 1.0f - momentum));
  var_out[c] = add_rn(mul_rn(running_var[c], momentum), mul_rn(var, 1.0f - momentum));
}

bool fits_32_bits(const BatchNormGeometry& g) {
  return g.outer * g.channels * g.inner < (int64_t{1} << 31);
}

}  // namespace

template <typename T>
void pool2d(const T* x, T* out, const PoolGeometry& g, Stream s) {
  const int64_t n = g.planes * g.out_h * g.out_w;
  if (n <= 0) return;
  if (fits_32_bits(g))
    pool2d_kernel<T, uint32_t><<<grid_for(n), kThreads, 0, s>>>(x, out, Geometry<uint32_t>(g));
  else
    pool2d_kernel<T, int64_t><<<grid_for(n), kThreads, 0, s>>>(x, out, Geometry<int64_t>(g));
}

template <typename T>
void pool2d_grad(const T* x, const T* out, const T* dout, T* dx, const PoolGeometry& g,
                 Stream s) {
  const int64_t n = g.planes * g.in_h * g.in_w;
  if (n <= 0) return;
  if (fits_32_bits(g))
    pool2d_grad_kernel<T, uint32_t>
        <<<grid_for(n), kThreads, 0, s>>>(x, out, dout, dx, Geometry<uint32_t>(g));
  else
    pool2d_grad_kernel<T, int64_t>
        <<<grid_for(n), kThreads, 0, s>>>(x, out, dout, dx, Geometry<int64_t>(g));
}

template <typename T>
void copy_planes(const T* src, T* dst, const PlaneCopy& c, Stream s) {
  const int64_t n = c.planes * c.rows * c.cols;
  if (n > 0) copy_planes_kernel<T><<<grid_for(n), kThreads, 0, s>>>(src, dst, c);
}

int64_t batch_norm_partials(const BatchNormGeometry& g) {
  return 2 * g.channels * splits_of(g);
}

template <typename T, typename U>
void batch_norm(const T* x, const U* scale, const U* bias, const U* running_mean,
                const U* running_var, T* y, U* mean_out, U* var_out, U* saved_mean,
                U* saved_inv_std, U* partials, const BatchNormGeometry& g, Stream s) {
  if (g.channels <= 0) return;
  const int64_t splits = splits_of(g);
  const auto blocks = static_cast<unsigned>(g.channels * splits);
  if (g.batch_stats) {
    batch_norm_sum_kernel<T, U><<<blocks, kThreads, 0, s>>>(x, nullptr, partials, splits, g);
    batch_norm_mean_kernel<U><<<grid_for(g.channels), kThreads, 0, s>>>(partials, saved_mean,
                                                                        splits, g);
    batch_norm_sum_kernel<T, U><<<blocks, kThreads, 0, s>>>(x, saved_mean, partials, splits, g);
  }
  batch_norm_stats_kernel<U><<<grid_for(g.channels), kThreads, 0, s>>>(
      partials, running_mean, running_var, mean_out, var_out, saved_mean, saved_inv_std, splits,
      g);
  const int64_t n = g.outer * g.channels * g.inner;
  if (n <= 0) return;
  if (fits_32_bits(g))
    batch_norm_apply_kernel<T, U, uint32_t><<<grid_for(n), kThreads, 0, s>>>(
        x, scale, bias, saved_mean, saved_inv_std, y, g);
  else
    batch_norm_apply_kernel<T, U, int64_t><<<grid_for(n), kThreads, 0, s>>>(
        x, scale, bias, saved_mean, saved_inv_std, y, g);
}

template <typename T, typename U>
void batch_norm_grad(const T* x, const U* scale, const U* mean, const U* spread, const T* dy,
                     T* dx, U* dscale, U* dbias, U* partials, const BatchNormGeometry& g,
                     Stream s) {
  if (g.channels <= 0) return;
  const int64_t splits = splits_of(g);
  batch_norm_grad_sum_kernel<T, U><<<static_cast<unsigned>(g.channels * splits), kThreads, 0, s>>>(
      x, mean, spread, dy, partials, splits, g);
  batch_norm_grad_total_kernel<U><<<grid_for(g.channels), kThreads, 0, s>>>(partials, dscale,
                                                                            dbias, splits, g);
  const int64_t n = g.outer * g.channels * g.inner;
  if (!dx || n <= 0) return;
  if (fits_32_bits(g))
    batch_norm_grad_x_kernel<T, U, uint32_t><<<grid_for(n), kThreads, 0, s>>>(
        x, scale, mean, spread, dy, dscale, dbias, dx, g);
  else
    batch_norm_grad_x_kernel<T, U, int64_t><<<grid_for(n), kThreads, 0, s>>>(
        x, scale, mean, spread, dy, dscale, dbias, dx, g);
}

void batch_norm_running_stats(const float* saved_mean, const float* saved_inv_std,
                              const float* running_mean, const float* running_var,
                              float* mean_out, float* var_out, const BatchNormGeometry& g,
                              Stream s) {
  if (g.channels <= 0) return;
  batch_norm_running_kernel<<<grid_for(g.channels), kThreads, 0, s>>>(
      saved_mean, saved_inv_std, running_mean, running_var, mean_out, var_out, g);
}

#define CTP_INSTANTIATE_POOL(T)                                                         \
  template void pool2d<T>(const T*, T*, const PoolGeometry&, Stream);                  \
  template void pool2d_grad<T>(const T*, const T*, const T*, T*, const PoolGeometry&, \
                               Stream);                                                \
  template void copy_planes<T>(const T*, T*, const PlaneCopy&, Stream);
#define CTP_INSTANTIATE_BATCH_NORM(T, U)                                                      \
  template void batch_norm<T, U>(const T*, const U*, const U*, const U*, const U*, T*, U*, U*, \
                                 U*, U*, U*, const BatchNormGeometry&, Stream);                \
  template void batch_norm_grad<T, U>(const T*, const U*, const U*, const U*, const T*, T*,    \
                                      U*, U*, U*, const BatchNormGeometry&, Stream);

CTP_INSTANTIATE_POOL(float)
CTP_INSTANTIATE_POOL(double)
CTP_INSTANTIATE_POOL(Half)
CTP_INSTANTIATE_POOL(BFloat16)
CTP_INSTANTIATE_BATCH_NORM(float, float)
CTP_INSTANTIATE_BATCH_NORM(double, double)
CTP_INSTANTIATE_BATCH_NORM(Half, float)
CTP_INSTANTIATE_BATCH_NORM(BFloat16, float)

}  // namespace ctp::cuda::launch
