#include "ops/cuda/batch_norm_cudnn.h"

#include <cudnn.h>

#include <limits>

#include "executor/cuda/cudnn_check.h"

namespace ctp::cuda {
namespace {

// X (and Y, dY, dX) as [outer, channels, inner, 1] in NCHW order, and the
// [1, channels, 1, 1] FP32 descriptor cuDNN derives for the statistics.
class BatchNormDescriptors {
 public:
  BatchNormDescriptors(DataType x_dtype, const meta::BatchNormMeta& m) {
    CTP_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x_));
    CTP_CUDNN_CHECK(cudnnCreateTensorDescriptor(&stats_));
    const cudnnDataType_t type =
        x_dtype == DataType::BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
    CTP_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, type,
                                               static_cast<int>(m.outer),
                                               static_cast<int>(m.channels),
                                               static_cast<int>(m.inner), 1));
    CTP_CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(stats_, x_, CUDNN_BATCHNORM_SPATIAL));
  }
  ~BatchNormDescriptors() {
    cudnnDestroyTensorDescriptor(x_);
    cudnnDestroyTensorDescriptor(stats_);
  }
  BatchNormDescriptors(const BatchNormDescriptors&) = delete;
  BatchNormDescriptors& operator=(const BatchNormDescriptors&) = delete;
  cudnnTensorDescriptor_t x() const { return x_; }
  cudnnTensorDescriptor_t stats() const { return stats_; }

 private:
  cudnnTensorDescriptor_t x_ = nullptr, stats_ = nullptr;
};

bool supported(cudnnStatus_t status, const char* call) {
  if (status == CUDNN_STATUS_NOT_SUPPORTED) return false;
  if (status != CUDNN_STATUS_SUCCESS) throw_cudnn_error(status, call, __FILE__, __LINE__);
  return true;
}

}  // namespace

bool cudnn_batch_norm_applies(DataType x_dtype, const meta::BatchNormMeta& m) {
  const int64_t int_max = std::numeric_limits<int>::max();
  return (x_dtype == DataType::BF16 || x_dtype == DataType::FP16) && m.batch_stats &&
         m.epsilon >= CUDNN_BN_MIN_EPSILON && m.outer > 0 && m.channels > 0 && m.inner > 0 &&
         m.outer * m.channels * m.inner <= int_max;
}

bool cudnn_batch_norm_forward(DeviceContext& dc, DataType x_dtype, const meta::BatchNormMeta& m,
                              const void* x, void* y, const float* scale, const float* bias,
                              float* saved_mean, float* saved_inv_std) {
  const BatchNormDescriptors d(x_dtype, m);
  const float one = 1, zero = 0;
  // No running statistics here (null, factor 0): see the header.
  return supported(cudnnBatchNormalizationForwardTraining(
                       dc.cudnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, d.x(), x, d.x(), y,
                       d.stats(), scale, bias, 0.0, nullptr, nullptr, m.epsilon, saved_mean,
                       saved_inv_std),
                   "cudnnBatchNormalizationForwardTraining");
}

bool cudnn_batch_norm_backward(DeviceContext& dc, DataType x_dtype,
                               const meta::BatchNormMeta& m, const void* x, const void* dy,
                               void* dx, const float* scale, float* dscale, float* dbias,
                               const float* saved_mean, const float* saved_inv_std) {
  const BatchNormDescriptors d(x_dtype, m);
  const float one = 1, zero = 0;
  return supported(cudnnBatchNormalizationBackward(
                       dc.cudnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, d.x(), x,
                       d.x(), dy, d.x(), dx, d.stats(), scale, dscale, dbias, m.epsilon,
                       saved_mean, saved_inv_std),
                   "cudnnBatchNormalizationBackward");
}

}  // namespace ctp::cuda
