// batch_norm and batch_norm_grad with batch statistics on cuDNN
// (cudnnBatchNormalizationForwardTraining / Backward, per-channel "spatial"
// mode) for 16-bit X with FP32 statistics, scale and bias: the path Paddle's
// and PyTorch's GPU kernels take, a pass or two fewer over X than ctp's own
// kernels (ops/cuda/cv_kernels.cu), which run every other case and FP32/FP64
// (whose results agree with the CPU's to rounding). The running statistics
// are updated by ctp's kernel from the saved batch mean and 1/std, with the
// biased variance as Paddle's CPU kernel (cuDNN's own update takes the
// unbiased one).
#pragma once
#include "executor/cuda/device_context.h"
#include "ops/schema/meta_batch_norm.h"

namespace ctp::cuda {

// Whether cuDNN is asked to run this batch_norm (or its grad): 16-bit X,
// batch statistics, an epsilon cuDNN accepts, sizes that fit its ints.
bool cudnn_batch_norm_applies(DataType x_dtype, const meta::BatchNormMeta& m);

// Y, SavedMean and SavedVariance (1 / std). False when cuDNN does not
// support the case (the caller runs its own kernels); other cuDNN errors throw.
bool cudnn_batch_norm_forward(DeviceContext& dc, DataType x_dtype, const meta::BatchNormMeta& m,
                              const void* x, void* y, const float* scale, const float* bias,
                              float* saved_mean, float* saved_inv_std);

// X@GRAD, Scale@GRAD and Bias@GRAD from the saved batch statistics; false as above.
bool cudnn_batch_norm_backward(DeviceContext& dc, DataType x_dtype,
                               const meta::BatchNormMeta& m, const void* x, const void* dy,
                               void* dx, const float* scale, float* dscale, float* dbias,
                               const float* saved_mean, const float* saved_inv_std);

}  // namespace ctp::cuda
