// CUDA kernels of conv2d and depthwise_conv2d (a grouped conv2d) and their
// grads, on cuDNN (FP32, FP64, FP16, BF16), under the rules of
// ops/schema/meta_conv.h. FP32 and FP64 run in FMA math (no TF32), as the
// GEMMs do; FP16 and BF16 compute in float and may use tensor cores. cuDNN
// pads both sides of a dim alike, so asymmetric paddings (four values, or
// SAME with an odd total) first copy the input into a zero-padded buffer.
#include <cudnn.h>

#include <type_traits>
#include <vector>

#include "executor/cuda/cudnn_check.h"
#include "ops/common/kernel_util.h"
#include "ops/cuda/cuda_kernel_util.h"
#include "ops/cuda/cv_device_kernels.h"
#include "ops/schema/meta_conv.h"

namespace ctp::cuda {
namespace {

template <typename T>
cudnnDataType_t cudnn_type() {
  if constexpr (std::is_same_v<T, double>) return CUDNN_DATA_DOUBLE;
  else if constexpr (std::is_same_v<T, launch::Half>) return CUDNN_DATA_HALF;
  else if constexpr (std::is_same_v<T, launch::BFloat16>) return CUDNN_DATA_BFLOAT16;
  else return CUDNN_DATA_FLOAT;
}

// alpha and beta as cuDNN reads them: double for FP64, float otherwise.
template <typename T>
using Scaling = std::conditional_t<std::is_same_v<T, double>, double, float>;

// The descriptors of one convolution: input (possibly padded), filter,
// output, and the convolution itself.
struct ConvDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  bool fma_only = true;  // FP32/FP64: no tensor-op (TF32) algorithms

  ConvDescriptors() {
    CTP_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x));
    CTP_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y));
    CTP_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w));
    CTP_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
  }
  ~ConvDescriptors() {
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyConvolutionDescriptor(conv);
  }
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;
};

int as_int(KernelContext& ctx, int64_t v) {
  if (v > INT32_MAX) ctx.fail("a dim of " + std::to_string(v) + " exceeds cuDNN's 32-bit sizes");
  return static_cast<int>(v);
}

// How the input reaches cuDNN: as it is (symmetric paddings, given to
// cuDNN), or copied into a buffer that holds the paddings.
struct Padding {
  bool explicit_buffer;
  int64_t h, w;  // the input's height and width as cuDNN sees it
  int pad_h, pad_w;
};

Padding padding_of(const meta::Conv2dMeta& m) {
  const auto& p = m.window.pad;
  if (p[0] == p[1] && p[2] == p[3])
    return {false, m.in_h, m.in_w, static_cast<int>(p[0]), static_cast<int>(p[2])};
  return {true, m.in_h + p[0] + p[1], m.in_w + p[2] + p[3], 0, 0};
}

template <typename T>
void describe(KernelContext& ctx, ConvDescriptors& d, const meta::Conv2dMeta& m,
              const Padding& pad) {
  const cudnnDataType_t type = cudnn_type<T>();
  const meta::Window2d& w = m.window;
  CTP_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, type, as_int(ctx, m.batch),
                                             as_int(ctx, m.in_channels), as_int(ctx, pad.h),
                                             as_int(ctx, pad.w)));
  CTP_CUDNN_CHECK(cudnnSetFilter4dDescriptor(
      d.w, type, CUDNN_TENSOR_NCHW, as_int(ctx, m.out_channels),
      as_int(ctx, m.in_channels / m.groups), as_int(ctx, w.kernel[0]), as_int(ctx, w.kernel[1])));
  CTP_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, type, as_int(ctx, m.batch),
                                             as_int(ctx, m.out_channels), as_int(ctx, m.out_h),
                                             as_int(ctx, m.out_w)));
  const bool wide = std::is_same_v<T, float> || std::is_same_v<T, double>;
  CTP_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      d.conv, pad.pad_h, pad.pad_w, as_int(ctx, w.stride[0]), as_int(ctx, w.stride[1]),
      as_int(ctx, w.dilation[0]), as_int(ctx, w.dilation[1]), CUDNN_CROSS_CORRELATION,
      std::is_same_v<T, double> ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT));
  CTP_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d.conv, as_int(ctx, m.groups)));
  d.fma_only = wide;
  CTP_CUDNN_CHECK(
      cudnnSetConvolutionMathType(d.conv, wide ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
}

// The fastest algorithm cuDNN's heuristics offer that runs, its math type
// set on the descriptor. FP32/FP64 take an FMA-math one when offered, and
// otherwise run the first one under FMA math (DEFAULT math would allow TF32
// on Ampere and later).
template <typename Perf>
Perf pick(KernelContext& ctx, ConvDescriptors& d, const Perf* perf, int count,
          const char* what) {
  const Perf* chosen = nullptr;
  for (int i = 0; i < count && !chosen; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && (!d.fma_only || perf[i].mathType == CUDNN_FMA_MATH))
      chosen = &perf[i];
  for (int i = 0; i < count && !chosen; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) chosen = &perf[i];
  if (!chosen) ctx.fail(std::string("cuDNN offers no ") + what + " algorithm for this convolution");
  CTP_CUDNN_CHECK(
      cudnnSetConvolutionMathType(d.conv, d.fma_only ? CUDNN_FMA_MATH : chosen->mathType));
  return *chosen;
}

// The input as cuDNN reads it: the tensor itself, or a zero-padded copy.
template <typename T>
const T* cudnn_input(KernelContext& ctx, const Tensor& input, const meta::Conv2dMeta& m,
                     const Padding& pad, Tensor& padded) {
  if (!pad.explicit_buffer) return input.data<T>();
  padded = Tensor(input.dtype(), {m.batch, m.in_channels, pad.h, pad.w},
                  device_context(ctx).device());  // zero-filled
  const auto& p = m.window.pad;
  launch::copy_planes<T>(input.data<T>(), padded.data<T>(),
                         {m.batch * m.in_channels, m.in_h, m.in_w, m.in_h, m.in_w, 0, 0, pad.h,
                          pad.w, p[0], p[2]},
                         device_context(ctx).compute_stream());
  return padded.data<T>();
}

void conv2d(KernelContext& ctx) {
  const Tensor input = device_input(ctx, "Input");
  const Tensor filter = device_input(ctx, "Filter");
  const meta::Conv2dMeta m = meta::conv2d(ctx, meta_of(input), meta_of(filter));
  dispatch_mixed(input.dtype(), ctx, "Input", [&]<typename T>() {
    Tensor& out = device_output(ctx, "Output", 0, input.dtype(), m.out_shape);
    if (out.numel() == 0) return;
    DeviceContext& dc = device_context(ctx);
    const Padding pad = padding_of(m);
    ConvDescriptors d;
    describe<T>(ctx, d, m, pad);
    Tensor padded;
    const T* x = cudnn_input<T>(ctx, input, m, pad, padded);
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int count = 0;
    CTP_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
        dc.cudnn(), d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf));
    const auto algo = pick(ctx, d, perf, count, "forward");
    std::size_t bytes = 0;
    CTP_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(dc.cudnn(), d.x, d.w, d.conv, d.y,
                                                            algo.algo, &bytes));
    void* workspace = bytes ? dc.compute_workspace(bytes) : nullptr;
    const Scaling<T> one = 1, zero = 0;
    CTP_CUDNN_CHECK(cudnnConvolutionForward(dc.cudnn(), &one, d.x, x, d.w, filter.data<T>(),
                                            d.conv, algo.algo, workspace, bytes, &zero, d.y,
                                            out.data<T>()));
  });
}

template <typename T>
void input_grad(KernelContext& ctx, ConvDescriptors& d, const meta::Conv2dMeta& m,
                const Padding& pad, const Tensor& input, const Tensor& filter,
                const Tensor& dout) {
  DeviceContext& dc = device_context(ctx);
  Tensor& dinput = device_output(ctx, "Input@GRAD", 0, input.dtype(), input.shape());
  Tensor padded;
  if (pad.explicit_buffer)
    padded = Tensor(input.dtype(), {m.batch, m.in_channels, pad.h, pad.w}, dc.device());
  T* dx = pad.explicit_buffer ? padded.data<T>() : dinput.data<T>();
  cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  int count = 0;
  CTP_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
      dc.cudnn(), d.w, d.y, d.conv, d.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf));
  const auto algo = pick(ctx, d, perf, count, "backward data");
  std::size_t bytes = 0;
  CTP_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(dc.cudnn(), d.w, d.y, d.conv,
                                                               d.x, algo.algo, &bytes));
  void* workspace = bytes ? dc.compute_workspace(bytes) : nullptr;
  const Scaling<T> one = 1, zero = 0;
  CTP_CUDNN_CHECK(cudnnConvolutionBackwardData(dc.cudnn(), &one, d.w, filter.data<T>(), d.y,
                                               dout.data<T>(), d.conv, algo.algo, workspace,
                                               bytes, &zero, d.x, dx));
  if (!pad.explicit_buffer) return;
  const auto& p = m.window.pad;  // the input's part of the padded gradient
  launch::copy_planes<T>(dx, dinput.data<T>(),
                         {m.batch * m.in_channels, m.in_h, m.in_w, pad.h, pad.w, p[0], p[2],
                          m.in_h, m.in_w, 0, 0},
                         dc.compute_stream());
}

template <typename T>
void filter_grad(KernelContext& ctx, ConvDescriptors& d, const meta::Conv2dMeta& m,
                 const Padding& pad, const Tensor& input, const Tensor& filter,
                 const Tensor& dout) {
  DeviceContext& dc = device_context(ctx);
  Tensor& dfilter = device_output(ctx, "Filter@GRAD", 0, filter.dtype(), filter.shape());
  Tensor padded;
  const T* x = cudnn_input<T>(ctx, input, m, pad, padded);
  cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  int count = 0;
  CTP_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
      dc.cudnn(), d.x, d.y, d.conv, d.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf));
  const auto algo = pick(ctx, d, perf, count, "backward filter");
  std::size_t bytes = 0;
  CTP_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(dc.cudnn(), d.x, d.y, d.conv,
                                                                 d.w, algo.algo, &bytes));
  void* workspace = bytes ? dc.compute_workspace(bytes) : nullptr;
  const Scaling<T> one = 1, zero = 0;
  CTP_CUDNN_CHECK(cudnnConvolutionBackwardFilter(dc.cudnn(), &one, d.x, x, d.y, dout.data<T>(),
                                                 d.conv, algo.algo, workspace, bytes, &zero,
                                                 d.w, dfilter.data<T>()));
}

void conv2d_grad(KernelContext& ctx) {
  const Tensor input = device_input(ctx, "Input");
  const Tensor filter = device_input(ctx, "Filter");
  const Tensor dout = device_input(ctx, "Output@GRAD");
  const meta::Conv2dMeta m =
      meta::conv2d_grad(ctx, meta_of(input), meta_of(filter), meta_of(dout));
  dispatch_mixed(input.dtype(), ctx, "Input", [&]<typename T>() {
    const Padding pad = padding_of(m);
    ConvDescriptors d;
    describe<T>(ctx, d, m, pad);
    if (ctx.has_output("Input@GRAD")) input_grad<T>(ctx, d, m, pad, input, filter, dout);
    if (ctx.has_output("Filter@GRAD")) filter_grad<T>(ctx, d, m, pad, input, filter, dout);
  });
}

}  // namespace

CTP_REGISTER_KERNEL(conv2d, CUDA, conv2d);
CTP_REGISTER_KERNEL(conv2d_grad, CUDA, conv2d_grad);
CTP_REGISTER_KERNEL(depthwise_conv2d, CUDA, conv2d);
CTP_REGISTER_KERNEL(depthwise_conv2d_grad, CUDA, conv2d_grad);

}  // namespace ctp::cuda
