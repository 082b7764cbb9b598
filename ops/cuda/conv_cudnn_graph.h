// 16-bit (FP16, BF16) convolutions through cuDNN's graph (backend) API, as
// PyTorch's cuDNN v8 path does: cuDNN's heuristics rank the engines that fit
// the convolution (its precompiled tensor-core engines among them, which the
// legacy cudnnFind*/cudnnConvolution* API does not offer for NCHW 16-bit
// data), and ctp times the leading candidates several times each, once per
// shape, and keeps the fastest one's execution plan for the run in the
// DeviceContext. The legacy search ran each algorithm once and picked
// differently from process to process (ResNet-50's conv2d_grad 7.4 to 14.9
// ms a step on an H100, bench/RESULTS.md). Internal to ops/cuda.
#pragma once
#include <cudnn.h>

#include <cstdint>

#include "executor/runtime/kernel.h"

namespace ctp::cuda {

enum class ConvDirection { kForward, kBackwardData, kBackwardFilter };

// One convolution as cuDNN sees it: NCHW sizes of the input x, the filter w
// ([out channels, in channels / groups, kh, kw]: cuDNN reads the group count
// from them) and the output y, with the same padding on both sides of a dim.
struct GraphConv {
  cudnnDataType_t type = CUDNN_DATA_BFLOAT16;  // CUDNN_DATA_HALF or CUDNN_DATA_BFLOAT16
  int64_t x[4] = {}, w[4] = {}, y[4] = {};
  int64_t pad[2] = {}, stride[2] = {}, dilation[2] = {};
};

// One direction of `conv` on packed NCHW buffers, in float arithmetic:
// forward writes y from x and w, backward data writes x (the input's
// gradient) from y (the output's gradient) and w, backward filter writes w
// from x and y. Queued on the run's compute stream. Throws ctp::Error naming
// the op when cuDNN offers no engine for it.
void run_graph_conv(KernelContext& ctx, ConvDirection direction, const GraphConv& conv, void* x,
                    void* w, void* y);

}  // namespace ctp::cuda
