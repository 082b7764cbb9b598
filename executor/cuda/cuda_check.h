// Turns CUDA and cuBLAS status codes into ctp::Error, naming the call that
// failed and the device it ran on. Internal to executor/cuda and ops/cuda.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "program_ir/error.h"

namespace ctp::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file,
                                     int line);

// Sets the calling thread's current device for its lifetime and restores the
// previous one after (a process may drive several GPUs from one thread).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace ctp::cuda

#define CTP_CUDA_CHECK(call)                                                     \
  do {                                                                           \
    cudaError_t ctp_cuda_status_ = (call);                                       \
    if (ctp_cuda_status_ != cudaSuccess)                                         \
      ::ctp::cuda::throw_cuda_error(ctp_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define CTP_CUBLAS_CHECK(call)                                                       \
  do {                                                                               \
    cublasStatus_t ctp_cublas_status_ = (call);                                      \
    if (ctp_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                 \
      ::ctp::cuda::throw_cublas_error(ctp_cublas_status_, #call, __FILE__, __LINE__); \
  } while (0)
