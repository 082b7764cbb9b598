// Device memory: cudaMalloc'd buffers, registered as the CUDA allocator of
// executor/runtime/tensor.h, and the status-to-error helpers of cuda_check.h.
#include <cstring>
#include <string>

#include "executor/cuda/cuda_check.h"
#include "executor/runtime/tensor.h"

namespace ctp::cuda {

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  int device = -1;
  cudaGetDevice(&device);
  cudaGetLastError();  // clear a sticky-free error so later calls are not blamed
  throw Error(std::string("CUDA error on gpu:") + std::to_string(device) + ": " +
              cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ") in " + call +
              " at " + file + ":" + std::to_string(line));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  int device = -1;
  cudaGetDevice(&device);
  throw Error(std::string("cuBLAS error on gpu:") + std::to_string(device) + ": " +
              cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ") in " +
              call + " at " + file + ":" + std::to_string(line));
}

DeviceGuard::DeviceGuard(int device) {
  CTP_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) CTP_CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() {
  int now = -1;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
}

namespace {

class CudaBuffer final : public Buffer {
 public:
  CudaBuffer(Device device, std::size_t bytes) : device_(device), size_(bytes) {
    if (bytes == 0) return;
    DeviceGuard guard(device.index);
    cudaError_t status = cudaMalloc(&data_, bytes);
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw Error("cannot allocate " + std::to_string(bytes) + " bytes on " +
                  device.to_string() + ": " + cudaGetErrorString(status));
    }
    // Zero-filled like CPU buffers. On the legacy default stream, which every
    // ctp stream (created blocking) waits for, so no stream reads it early.
    CTP_CUDA_CHECK(cudaMemset(data_, 0, bytes));
  }
  ~CudaBuffer() override {
    if (!data_) return;
    int previous = -1;
    cudaGetDevice(&previous);
    cudaSetDevice(device_.index);
    cudaFree(data_);  // synchronizes the device: no queued work still uses it
    cudaSetDevice(previous);
  }
  void* data() override { return data_; }
  std::size_t size() const override { return size_; }
  Device device() const override { return device_; }

 private:
  Device device_;
  void* data_ = nullptr;
  std::size_t size_;
};

// Page-locked host memory: a CPU buffer the GPU's copy engines read and
// write directly, so uploads from it need no staging through the driver.
class PinnedHostBuffer final : public Buffer {
 public:
  explicit PinnedHostBuffer(std::size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    cudaError_t status = cudaHostAlloc(&data_, bytes, cudaHostAllocPortable);
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw Error("cannot allocate " + std::to_string(bytes) +
                  " bytes of page-locked host memory: " + cudaGetErrorString(status));
    }
    std::memset(data_, 0, bytes);  // zero-filled like every CPU buffer
  }
  ~PinnedHostBuffer() override {
    if (data_) cudaFreeHost(data_);
  }
  void* data() override { return data_; }
  std::size_t size() const override { return size_; }
  Device device() const override { return Device{}; }

 private:
  void* data_ = nullptr;
  std::size_t size_;
};

std::shared_ptr<Buffer> allocate_cuda_buffer(Device device, std::size_t bytes) {
  return std::make_shared<CudaBuffer>(device, bytes);
}

const bool registered = [] {
  register_device_allocator(DeviceKind::CUDA, allocate_cuda_buffer);
  return true;
}();

}  // namespace

std::shared_ptr<Buffer> allocate_pinned_host_buffer(std::size_t bytes) {
  return std::make_shared<PinnedHostBuffer>(bytes);
}

}  // namespace ctp::cuda
