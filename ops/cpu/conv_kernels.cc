// conv2d and depthwise_conv2d (a conv2d whose groups are its channels) and
// their gradients on the CPU, as im2col + gemm per image and group: the
// window's input cells become the columns of a [C/g * KH * KW, OH * OW]
// matrix that the group's filters multiply.
#include <algorithm>
#include <vector>

#include "ops/cpu/cpu_kernel_util.h"
#include "ops/cpu/float16_compute.h"
#include "ops/cpu/gemm.h"
#include "ops/schema/meta_conv.h"

namespace ctp::cpu {
namespace {

// One image's `channels` planes [H, W] and the columns of its windows.
struct Im2col {
  const meta::Conv2dMeta& m;
  int64_t channels;
  int64_t rows() const { return channels * m.window.kernel[0] * m.window.kernel[1]; }
  int64_t cols() const { return m.out_h * m.out_w; }

  // Calls f(row, col, input offset) for every cell a window reads inside the
  // input (cells in the padding read zero and are skipped).
  template <typename F>
  void for_each_cell(F&& f) const {
    const meta::Window2d& w = m.window;
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < w.kernel[0]; ++i)
        for (int64_t j = 0; j < w.kernel[1]; ++j) {
          const int64_t row = (c * w.kernel[0] + i) * w.kernel[1] + j;
          for (int64_t oh = 0; oh < m.out_h; ++oh) {
            const int64_t h = oh * w.stride[0] - w.pad_before(0) + i * w.dilation[0];
            if (h < 0 || h >= m.in_h) continue;
            for (int64_t ow = 0; ow < m.out_w; ++ow) {
              const int64_t x = ow * w.stride[1] - w.pad_before(1) + j * w.dilation[1];
              if (x < 0 || x >= m.in_w) continue;
              f(row, oh * m.out_w + ow, (c * m.in_h + h) * m.in_w + x);
            }
          }
        }
  }
  template <typename T>
  void gather(const T* image, T* col) const {
    std::fill(col, col + rows() * cols(), T(0));
    for_each_cell([&](int64_t r, int64_t c, int64_t at) { col[r * cols() + c] = image[at]; });
  }
  template <typename T>
  void scatter_add(const T* col, T* image) const {
    for_each_cell([&](int64_t r, int64_t c, int64_t at) { image[at] += col[r * cols() + c]; });
  }
};

// The per-(image, group) blocks of Input, Filter and Output.
struct ConvBlocks {
  const meta::Conv2dMeta& m;
  int64_t in_channels() const { return m.in_channels / m.groups; }
  int64_t out_channels() const { return m.out_channels / m.groups; }
  int64_t input(int64_t n, int64_t g) const {
    return (n * m.in_channels + g * in_channels()) * m.in_h * m.in_w;
  }
  int64_t filter(int64_t g, int64_t k) const { return g * out_channels() * k; }
  int64_t output(int64_t n, int64_t g) const {
    return (n * m.out_channels + g * out_channels()) * m.out_h * m.out_w;
  }
};

void conv2d(KernelContext& ctx) {
  const Tensor& input = ctx.input("Input");
  const Tensor& filter = ctx.input("Filter");
  const meta::Conv2dMeta m = meta::conv2d(ctx, meta_of(input), meta_of(filter));
  Tensor& out = ctx.output("Output");
  dispatch_float(input.dtype(), ctx, "Input", [&]<typename T>() {
    out.resize(input.dtype(), m.out_shape);
    const ConvBlocks b{m};
    const Im2col cols{m, b.in_channels()};
    std::vector<T> col(static_cast<std::size_t>(cols.rows() * cols.cols()));
    for (int64_t n = 0; n < m.batch; ++n)
      for (int64_t g = 0; g < m.groups; ++g) {
        cols.gather(input.data<T>() + b.input(n, g), col.data());
        gemm<T>(false, false, b.out_channels(), cols.cols(), cols.rows(),
                filter.data<T>() + b.filter(g, cols.rows()), col.data(),
                out.data<T>() + b.output(n, g));
      }
  });
}

// dFilter = sum over images of dOut * col^T; dInput = col2im(Filter^T * dOut).
void conv2d_grad(KernelContext& ctx) {
  const Tensor& input = ctx.input("Input");
  const Tensor& filter = ctx.input("Filter");
  const Tensor& dout = ctx.input("Output@GRAD");
  const meta::Conv2dMeta m =
      meta::conv2d_grad(ctx, meta_of(input), meta_of(filter), meta_of(dout));
  Tensor* dinput = ctx.has_output("Input@GRAD") ? &ctx.output("Input@GRAD") : nullptr;
  Tensor* dfilter = ctx.has_output("Filter@GRAD") ? &ctx.output("Filter@GRAD") : nullptr;
  dispatch_float(input.dtype(), ctx, "Input", [&]<typename T>() {
    const ConvBlocks b{m};
    const Im2col cols{m, b.in_channels()};
    std::vector<T> col(static_cast<std::size_t>(cols.rows() * cols.cols()));
    if (dinput) {
      dinput->resize(input.dtype(), input.shape());
      fill(*dinput, 0);
    }
    if (dfilter) {
      dfilter->resize(filter.dtype(), filter.shape());
      fill(*dfilter, 0);
    }
    for (int64_t n = 0; n < m.batch; ++n)
      for (int64_t g = 0; g < m.groups; ++g) {
        const T* dout_block = dout.data<T>() + b.output(n, g);
        if (dfilter) {
          cols.gather(input.data<T>() + b.input(n, g), col.data());
          gemm<T>(false, true, b.out_channels(), cols.rows(), cols.cols(), dout_block, col.data(),
                  dfilter->data<T>() + b.filter(g, cols.rows()), true);
        }
        if (dinput) {
          gemm<T>(true, false, cols.rows(), cols.cols(), b.out_channels(),
                  filter.data<T>() + b.filter(g, cols.rows()), dout_block, col.data());
          cols.scatter_add(col.data(), dinput->data<T>() + b.input(n, g));
        }
      }
  });
}

}  // namespace

CTP_REGISTER_KERNEL(conv2d, CPU, computed_in_float(conv2d));
CTP_REGISTER_KERNEL(conv2d_grad, CPU, computed_in_float(conv2d_grad));
CTP_REGISTER_KERNEL(depthwise_conv2d, CPU, computed_in_float(conv2d));
CTP_REGISTER_KERNEL(depthwise_conv2d_grad, CPU, computed_in_float(conv2d_grad));

}  // namespace ctp::cpu
