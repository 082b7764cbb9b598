// pool2d (max and avg; global, adaptive, ceil_mode, exclusive) and
// pool2d_grad on the CPU: one window per output cell, placed as in Paddle's
// CPU kernel (ops/schema/meta_conv.h). ops/cuda/pool_kernels.cu has the same
// window arithmetic.
#include <algorithm>
#include <limits>

#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cpu/float16_compute.h"
#include "ops/schema/meta_conv.h"

namespace ctp::cpu {
namespace {

// The input cells [start, end) output cell `o` reads along dim d, and the
// window's extent that avg divides by when it is not exclusive.
struct Span {
  int64_t start, end, extent;
};

Span span_of(const meta::Pool2dMeta& m, int d, int64_t o) {
  const int64_t in = d == 0 ? m.in_h : m.in_w;
  const int64_t out = d == 0 ? m.out_h : m.out_w;
  if (m.adaptive) {
    const int64_t start = o * in / out, end = ((o + 1) * in + out - 1) / out;
    return {start, end, end - start};
  }
  const meta::Window2d& w = m.window;
  const int64_t start = o * w.stride[d] - w.pad_before(d);
  const int64_t end = std::min(start + w.kernel[d], in + w.pad_before(d));
  return {std::max<int64_t>(start, 0), std::min(end, in), end - start};
}

// Calls f(output offset, h span, w span, divisor) for every output cell of one plane.
template <typename F>
void for_each_window(const meta::Pool2dMeta& m, F&& f) {
  for (int64_t oh = 0; oh < m.out_h; ++oh) {
    const Span h = span_of(m, 0, oh);
    for (int64_t ow = 0; ow < m.out_w; ++ow) {
      const Span w = span_of(m, 1, ow);
      const int64_t cells = (h.end - h.start) * (w.end - w.start);
      f(oh * m.out_w + ow, h, w, m.exclusive || m.adaptive ? cells : h.extent * w.extent);
    }
  }
}

void pool2d(KernelContext& ctx) {
  const Tensor& x = ctx.input("X");
  const meta::Pool2dMeta m = meta::pool2d(ctx, meta_of(x));
  Tensor& out = ctx.output("Out");
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    out.resize(x.dtype(), m.out_shape);
    for (int64_t plane = 0; plane < m.batch * m.channels; ++plane) {
      const T* in = x.data<T>() + plane * m.in_h * m.in_w;
      T* o = out.data<T>() + plane * m.out_h * m.out_w;
      for_each_window(m, [&](int64_t at, Span h, Span w, int64_t divisor) {
        T acc = m.max ? std::numeric_limits<T>::lowest() : T(0);
        for (int64_t i = h.start; i < h.end; ++i)
          for (int64_t j = w.start; j < w.end; ++j)
            acc = m.max ? std::max(acc, in[i * m.in_w + j]) : acc + in[i * m.in_w + j];
        o[at] = m.max ? acc : acc / static_cast<T>(divisor);
      });
    }
  });
}

// avg: each cell of a window gets dOut / divisor. max: the window's first
// cell holding the maximum gets dOut (adaptive: every such cell, as Paddle).
void pool2d_grad(KernelContext& ctx) {
  const Tensor& x = ctx.input("X");
  const Tensor& out = ctx.input("Out");
  const Tensor& dout = ctx.input("Out@GRAD");
  const meta::Pool2dMeta m = meta::pool2d_grad(ctx, meta_of(x), meta_of(out), meta_of(dout));
  if (!ctx.has_output("X@GRAD")) return;
  Tensor& dx = ctx.output("X@GRAD");
  dispatch_float(x.dtype(), ctx, "X", [&]<typename T>() {
    dx.resize(x.dtype(), x.shape());
    fill(dx, 0);
    for (int64_t plane = 0; plane < m.batch * m.channels; ++plane) {
      const int64_t in_at = plane * m.in_h * m.in_w, out_at = plane * m.out_h * m.out_w;
      const T* in = x.data<T>() + in_at;
      const T* o = out.data<T>() + out_at;
      const T* g = dout.data<T>() + out_at;
      T* d = dx.data<T>() + in_at;
      for_each_window(m, [&](int64_t at, Span h, Span w, int64_t divisor) {
        bool found = false;
        for (int64_t i = h.start; i < h.end; ++i)
          for (int64_t j = w.start; j < w.end; ++j) {
            const int64_t cell = i * m.in_w + j;
            if (!m.max) {
              d[cell] += g[at] / static_cast<T>(divisor);
            } else if (in[cell] == o[at] && (m.adaptive || !found)) {
              d[cell] += g[at];
              found = true;
            }
          }
      });
    }
  });
}

}  // namespace

CTP_REGISTER_KERNEL(pool2d, CPU, computed_in_float(pool2d));
CTP_REGISTER_KERNEL(pool2d_grad, CPU, computed_in_float(pool2d_grad));

}  // namespace ctp::cpu
