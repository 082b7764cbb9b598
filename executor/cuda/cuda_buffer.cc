// Device memory: stream-ordered (or cudaMalloc'd) buffers, registered as the CUDA allocator of
// executor/runtime/tensor.h, and the status-to-error helpers of cuda_check.h.
#include <algorithm>
#include <atomic>
#include <optional>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "executor/cuda/cuda_check.h"
#include "executor/cuda/device_context.h"
#include "executor/runtime/memory_stats.h"
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

// The streams GPU buffers are made, zero-filled and freed on, per device
// (see allocation_stream_for).
struct AllocationStreams {
  std::mutex mu;
  std::map<int, std::vector<CudaStream>> by_device;
  std::map<int, bool> pool_ready;  // stream-ordered pool set up (or unsupported: false)
};

AllocationStreams& allocation_streams() {
  static AllocationStreams streams;
  return streams;
}

// Whether `device` has a stream-ordered memory pool; sets it up on first use
// to keep freed memory for reuse instead of giving it back to the driver at
// every synchronization (the default release threshold is 0). Called with
// the registry's lock held.
bool pool_ready(AllocationStreams& streams, int device) {
  auto it = streams.pool_ready.find(device);
  if (it != streams.pool_ready.end()) return it->second;
  int supported = 0;
  cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device);
  cudaMemPool_t pool = nullptr;
  if (supported && cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
    uint64_t keep_all = UINT64_MAX;
    supported = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all) ==
                cudaSuccess;
  } else {
    supported = 0;
  }
  cudaGetLastError();
  streams.pool_ready[device] = supported != 0;
  return supported != 0;
}

// The stream on which a buffer of `device` is made now, or freed: the
// compute stream of the device's DeviceContext while exactly one exists.
// Every kernel runs on it in program order, so a buffer freed after its last
// kernel is queued is reused by a later one with no wait, as in PyTorch's
// caching allocator. Otherwise the legacy default stream (null), which
// every ctp stream (created blocking) waits for and is waited for by.
CudaStream allocation_stream_for(AllocationStreams& streams, int device) {
  auto it = streams.by_device.find(device);
  return it != streams.by_device.end() && it->second.size() == 1 ? it->second.front() : nullptr;
}

// GPU memory, zero-filled like CPU buffers. Where the device has memory
// pools: stream-ordered (cudaMallocAsync / cudaFreeAsync on the stream
// above), so freeing a buffer queues its release behind the kernels already
// queued that may use it, without waiting for them; else cudaMalloc, and
// cudaFree, which waits for the whole device. Work queued on a communication
// stream is not ordered before such a release: a buffer a collective may
// still use must not be dropped before the compute stream waits for it (the
// executor never frees collectives' vars; executor/var_release.h).
class CudaBuffer final : public Buffer {
 public:
  // `fill`: the byte every byte starts as (0, as CPU buffers), or none.
  CudaBuffer(Device device, std::size_t bytes, std::optional<unsigned char> fill)
      : device_(device), size_(bytes) {
    if (bytes == 0) return;
    DeviceGuard guard(device.index);
    AllocationStreams& streams = allocation_streams();
    CudaStream stream = nullptr;
    {
      std::lock_guard<std::mutex> lock(streams.mu);
      pooled_ = pool_ready(streams, device.index);
      stream = allocation_stream_for(streams, device.index);
    }
    cudaError_t status = pooled_ ? cudaMallocAsync(&data_, bytes, stream) : cudaMalloc(&data_, bytes);
    if (status != cudaSuccess) {
      cudaGetLastError();
      data_ = nullptr;
      throw Error("cannot allocate " + std::to_string(bytes) + " bytes on " +
                  device.to_string() + ": " + cudaGetErrorString(status));
    }
    if (fill) CTP_CUDA_CHECK(cudaMemsetAsync(data_, *fill, bytes, stream));
    note_buffer_made(DeviceKind::CUDA, bytes);
  }
  ~CudaBuffer() override {
    if (!data_) return;
    int previous = -1;
    cudaGetDevice(&previous);
    cudaSetDevice(device_.index);
    if (pooled_) {
      AllocationStreams& streams = allocation_streams();
      CudaStream stream = nullptr;
      {
        std::lock_guard<std::mutex> lock(streams.mu);
        stream = allocation_stream_for(streams, device_.index);
      }
      cudaFreeAsync(data_, stream);
    } else {
      cudaFree(data_);  // synchronizes the device: no queued work still uses it
    }
    cudaSetDevice(previous);
    note_buffer_freed(DeviceKind::CUDA, size_);
  }
  void* data() override { return data_; }
  std::size_t size() const override { return size_; }
  Device device() const override { return device_; }

 private:
  Device device_;
  void* data_ = nullptr;
  std::size_t size_;
  bool pooled_ = false;
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
  return std::make_shared<CudaBuffer>(device, bytes, 0);
}

std::atomic<bool> poison_uninitialized{false};

const bool registered = [] {
  register_device_allocator(DeviceKind::CUDA, allocate_cuda_buffer);
  return true;
}();

}  // namespace

std::shared_ptr<Buffer> allocate_uninitialized_buffer(Device device, std::size_t bytes) {
  return std::make_shared<CudaBuffer>(
      device, bytes,
      poison_uninitialized.load() ? std::optional<unsigned char>(0xff) : std::nullopt);
}

void set_poison_uninitialized(bool poison) { poison_uninitialized.store(poison); }

void add_allocation_stream(int device, CudaStream stream) {
  AllocationStreams& streams = allocation_streams();
  std::lock_guard<std::mutex> lock(streams.mu);
  streams.by_device[device].push_back(stream);
}

void remove_allocation_stream(int device, CudaStream stream) {
  AllocationStreams& streams = allocation_streams();
  std::lock_guard<std::mutex> lock(streams.mu);
  auto& list = streams.by_device[device];
  list.erase(std::remove(list.begin(), list.end(), stream), list.end());
}

std::shared_ptr<Buffer> allocate_pinned_host_buffer(std::size_t bytes) {
  return std::make_shared<PinnedHostBuffer>(bytes);
}

}  // namespace ctp::cuda
