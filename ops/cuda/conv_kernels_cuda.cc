// CUDA kernels of conv2d and depthwise_conv2d (a grouped conv2d) and their
// grads, on cuDNN (FP32, FP64, FP16, BF16), under the rules of
// ops/schema/meta_conv.h. FP32 and FP64 run in FMA math (no TF32), as the
// GEMMs do, unless the device context allows TF32 for FP32 convolutions;
// FP16 and BF16 compute in float and may use tensor cores. FP32/FP64: each
// direction's algorithm comes from cuDNN's legacy timed search, run once per
// shape and cached in the device context (as torch.backends.cudnn.benchmark
// does); FP16/BF16 run through cuDNN's graph API (conv_cudnn_graph.h). cuDNN
// pads both sides of a dim alike, so asymmetric paddings (four values, or
// SAME with an odd total) first copy the input into a zero-padded buffer.
#include <cudnn.h>

#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "executor/cuda/cudnn_check.h"
#include "ops/common/kernel_util.h"
#include "ops/cuda/conv_cudnn_graph.h"
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
  bool tf32 = false;      // FP32 with TF32 allowed (DeviceContext::conv_tf32)

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
  const bool tf32 = std::is_same_v<T, float> && device_context(ctx).conv_tf32();
  const bool wide = (std::is_same_v<T, float> && !tf32) || std::is_same_v<T, double>;
  CTP_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      d.conv, pad.pad_h, pad.pad_w, as_int(ctx, w.stride[0]), as_int(ctx, w.stride[1]),
      as_int(ctx, w.dilation[0]), as_int(ctx, w.dilation[1]), CUDNN_CROSS_CORRELATION,
      std::is_same_v<T, double> ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT));
  CTP_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d.conv, as_int(ctx, m.groups)));
  d.fma_only = wide;
  d.tf32 = tf32;
  // FP32 with TF32 allowed searches under DEFAULT math, which admits TF32
  // tensor-core kernels on Ampere and later (as PyTorch does).
  CTP_CUDNN_CHECK(cudnnSetConvolutionMathType(
      d.conv, wide ? CUDNN_FMA_MATH : (tf32 ? CUDNN_DEFAULT_MATH : CUDNN_TENSOR_OP_MATH)));
}

template <typename T>
constexpr bool is_16bit = std::is_same_v<T, launch::Half> || std::is_same_v<T, launch::BFloat16>;

// The convolution as the graph API sees it (16-bit types).
template <typename T>
GraphConv graph_conv(const meta::Conv2dMeta& m, const Padding& pad) {
  const meta::Window2d& w = m.window;
  GraphConv c;
  c.type = cudnn_type<T>();
  const int64_t x[4] = {m.batch, m.in_channels, pad.h, pad.w};
  const int64_t f[4] = {m.out_channels, m.in_channels / m.groups, w.kernel[0], w.kernel[1]};
  const int64_t y[4] = {m.batch, m.out_channels, m.out_h, m.out_w};
  std::copy(x, x + 4, c.x);
  std::copy(f, f + 4, c.w);
  std::copy(y, y + 4, c.y);
  c.pad[0] = pad.pad_h;
  c.pad[1] = pad.pad_w;
  std::copy(w.stride.begin(), w.stride.begin() + 2, c.stride);
  std::copy(w.dilation.begin(), w.dilation.begin() + 2, c.dilation);
  return c;
}

// The key of one convolution's algorithm choice: direction, data type,
// math allowed, and every size cuDNN sees.
template <typename T>
std::string choice_key(const char* direction, bool tf32, const meta::Conv2dMeta& m,
                       const Padding& pad) {
  const meta::Window2d& w = m.window;
  std::string key = std::string(direction) + " t" + std::to_string(cudnn_type<T>()) +
                    (tf32 ? " tf32" : "");
  for (int64_t v : {m.batch, m.in_channels, pad.h, pad.w, m.out_channels, m.groups,
                    w.kernel[0], w.kernel[1], m.out_h, m.out_w, int64_t{pad.pad_h},
                    int64_t{pad.pad_w}, w.stride[0], w.stride[1], w.dilation[0], w.dilation[1]})
    key += " " + std::to_string(v);
  return key;
}

// The most workspace an algorithm search offers: the fastest algorithms of
// large convolutions want hundreds of MiB, and the chosen one's workspace
// stays allocated for the run (DeviceContext::compute_workspace).
constexpr std::size_t kSearchWorkspaceLimit = std::size_t{1} << 30;

// Scratch for one search, freed after it: the limit or half the GPU's free
// memory, whichever is less.
Tensor search_workspace(KernelContext& ctx) {
  std::size_t free = 0, total = 0;
  CTP_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const std::size_t bytes = std::min(kSearchWorkspaceLimit, free / 2);
  return Tensor(DataType::UINT8, {static_cast<int64_t>(bytes)}, device_context(ctx).device());
}

// The fastest algorithm that ran in cuDNN's timed search (`perf` is sorted by
// time), under the math the descriptor allows: FP32 without TF32 and FP64
// take FMA-math algorithms when there are any, and otherwise the fastest
// under FMA math (DEFAULT math would allow TF32 on Ampere and later).
template <typename Perf>
DeviceContext::AlgorithmChoice pick(KernelContext& ctx, const ConvDescriptors& d,
                                    const Perf* perf, int count, const char* what) {
  const Perf* chosen = nullptr;
  for (int i = 0; i < count && !chosen; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && (!d.fma_only || perf[i].mathType == CUDNN_FMA_MATH))
      chosen = &perf[i];
  for (int i = 0; i < count && !chosen; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) chosen = &perf[i];
  if (!chosen) ctx.fail(std::string("cuDNN offers no ") + what + " algorithm for this convolution");
  return {static_cast<int>(chosen->algo),
          static_cast<int>(d.fma_only ? CUDNN_FMA_MATH : chosen->mathType), chosen->memory};
}

// The algorithm of one convolution direction: the cached choice, else
// cuDNN's timed search (`search(workspace, bytes, perf, &count)`, which runs
// every algorithm once on the op's own buffers) remembered for the run. The
// descriptor's math type is set to the choice's.
template <typename Perf, typename Search>
DeviceContext::AlgorithmChoice choose(KernelContext& ctx, ConvDescriptors& d,
                                      const std::string& key, int algorithm_count,
                                      const char* what, Search&& search) {
  DeviceContext& dc = device_context(ctx);
  std::optional<DeviceContext::AlgorithmChoice> choice = dc.find_algorithm(key);
  if (!choice) {
    Tensor workspace = search_workspace(ctx);
    std::vector<Perf> perf(static_cast<std::size_t>(algorithm_count));
    int count = 0;
    search(workspace.raw_data(), workspace.bytes(), perf.data(), &count);
    choice = pick(ctx, d, perf.data(), count, what);
    dc.remember_algorithm(key, *choice);
  }
  CTP_CUDNN_CHECK(
      cudnnSetConvolutionMathType(d.conv, static_cast<cudnnMathType_t>(choice->math_type)));
  return *choice;
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
    Tensor padded;
    const T* x = cudnn_input<T>(ctx, input, m, pad, padded);
    if constexpr (is_16bit<T>) {
      run_graph_conv(ctx, ConvDirection::kForward, graph_conv<T>(m, pad), const_cast<T*>(x),
                     const_cast<T*>(filter.data<T>()), out.data<T>());
      return;
    }
    ConvDescriptors d;
    describe<T>(ctx, d, m, pad);
    const auto choice = choose<cudnnConvolutionFwdAlgoPerf_t>(
        ctx, d, choice_key<T>("fwd", d.tf32, m, pad), CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
        "forward", [&](void* ws, std::size_t ws_bytes, auto* perf, int* count) {
          CTP_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
              dc.cudnn(), d.x, x, d.w, filter.data<T>(), d.conv, d.y, out.data<T>(),
              CUDNN_CONVOLUTION_FWD_ALGO_COUNT, count, perf, ws, ws_bytes));
        });
    const std::size_t bytes = choice.workspace_bytes;
    void* workspace = bytes ? dc.compute_workspace(bytes) : nullptr;
    const Scaling<T> one = 1, zero = 0;
    CTP_CUDNN_CHECK(cudnnConvolutionForward(
        dc.cudnn(), &one, d.x, x, d.w, filter.data<T>(), d.conv,
        static_cast<cudnnConvolutionFwdAlgo_t>(choice.algorithm), workspace, bytes, &zero, d.y,
        out.data<T>()));
  });
}

// The input's gradient into dx (the padded buffer's size) on the legacy API.
template <typename T>
void legacy_input_grad(KernelContext& ctx, ConvDescriptors& d, const meta::Conv2dMeta& m,
                       const Padding& pad, const Tensor& filter, const Tensor& dout, T* dx) {
  DeviceContext& dc = device_context(ctx);
  const auto choice = choose<cudnnConvolutionBwdDataAlgoPerf_t>(
      ctx, d, choice_key<T>("bwd-data", d.tf32, m, pad), CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
      "backward data", [&](void* ws, std::size_t ws_bytes, auto* perf, int* count) {
        CTP_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
            dc.cudnn(), d.w, filter.data<T>(), d.y, dout.data<T>(), d.conv, d.x, dx,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, count, perf, ws, ws_bytes));
      });
  const std::size_t bytes = choice.workspace_bytes;
  void* workspace = bytes ? dc.compute_workspace(bytes) : nullptr;
  const Scaling<T> one = 1, zero = 0;
  CTP_CUDNN_CHECK(cudnnConvolutionBackwardData(
      dc.cudnn(), &one, d.w, filter.data<T>(), d.y, dout.data<T>(), d.conv,
      static_cast<cudnnConvolutionBwdDataAlgo_t>(choice.algorithm), workspace, bytes, &zero,
      d.x, dx));
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
  if constexpr (is_16bit<T>)
    run_graph_conv(ctx, ConvDirection::kBackwardData, graph_conv<T>(m, pad), dx,
                   const_cast<T*>(filter.data<T>()), const_cast<T*>(dout.data<T>()));
  else
    legacy_input_grad<T>(ctx, d, m, pad, filter, dout, dx);
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
  if constexpr (is_16bit<T>) {
    run_graph_conv(ctx, ConvDirection::kBackwardFilter, graph_conv<T>(m, pad), const_cast<T*>(x),
                   dfilter.data<T>(), const_cast<T*>(dout.data<T>()));
    return;
  }
  const auto choice = choose<cudnnConvolutionBwdFilterAlgoPerf_t>(
      ctx, d, choice_key<T>("bwd-filter", d.tf32, m, pad),
      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, "backward filter",
      [&](void* ws, std::size_t ws_bytes, auto* perf, int* count) {
        CTP_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
            dc.cudnn(), d.x, x, d.y, dout.data<T>(), d.conv, d.w, dfilter.data<T>(),
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, count, perf, ws, ws_bytes));
      });
  const std::size_t bytes = choice.workspace_bytes;
  void* workspace = bytes ? dc.compute_workspace(bytes) : nullptr;
  const Scaling<T> one = 1, zero = 0;
  CTP_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
      dc.cudnn(), &one, d.x, x, d.y, dout.data<T>(), d.conv,
      static_cast<cudnnConvolutionBwdFilterAlgo_t>(choice.algorithm), workspace, bytes, &zero,
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
    if constexpr (!is_16bit<T>) describe<T>(ctx, d, m, pad);
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
