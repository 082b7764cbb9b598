// pool2d and plane copies on the GPU (ops/cuda/cv_device_kernels.h), with the
// CPU kernel's window arithmetic: pool2d sums and gradients add in the CPU's
// order (so FP32 results agree bit for bit).
#include <cfloat>
#include <type_traits>

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

#define CTP_INSTANTIATE_POOL(T)                                                         \
  template void pool2d<T>(const T*, T*, const PoolGeometry&, Stream);                  \
  template void pool2d_grad<T>(const T*, const T*, const T*, T*, const PoolGeometry&, \
                               Stream);                                                \
  template void copy_planes<T>(const T*, T*, const PlaneCopy&, Stream);
CTP_INSTANTIATE_POOL(float)
CTP_INSTANTIATE_POOL(double)
CTP_INSTANTIATE_POOL(Half)
CTP_INSTANTIATE_POOL(BFloat16)

}  // namespace ctp::cuda::launch
