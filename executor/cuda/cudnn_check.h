// Turns cuDNN status codes into ctp::Error, naming the call that failed and
// the device it ran on (as cuda_check.h does for CUDA and cuBLAS). Internal
// to executor/cuda and ops/cuda.
#pragma once
#include <cudnn.h>

#include <string>

#include "executor/cuda/cuda_check.h"

namespace ctp::cuda {

[[noreturn]] inline void throw_cudnn_error(cudnnStatus_t status, const char* call,
                                           const char* file, int line) {
  int device = -1;
  cudaGetDevice(&device);
  throw Error(std::string("cuDNN error on gpu:") + std::to_string(device) + ": " +
              cudnnGetErrorString(status) + " in " + call + " at " + file + ":" +
              std::to_string(line));
}

}  // namespace ctp::cuda

#define CTP_CUDNN_CHECK(call)                                                       \
  do {                                                                              \
    cudnnStatus_t ctp_cudnn_status_ = (call);                                       \
    if (ctp_cudnn_status_ != CUDNN_STATUS_SUCCESS)                                  \
      ::ctp::cuda::throw_cudnn_error(ctp_cudnn_status_, #call, __FILE__, __LINE__); \
  } while (0)
