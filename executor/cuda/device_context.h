// One GPU's execution state for a run: a compute stream on which every
// kernel of the program is queued in program order, one communication
// stream per ring on which that ring's collectives run, and the cuBLAS and
// cuDNN handles bound to the compute stream. Streams are ordered with events
// (GPU-side waits); the host blocks only where it reads results.
//
// The header needs no CUDA toolkit (streams and handles are opaque), so
// embedders and benchmarks can hold a DeviceContext without CUDA's headers.
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "executor/runtime/tensor.h"

struct CUstream_st;
struct CUevent_st;
struct cublasContext;
struct cudnnContext;

namespace ctp {

using CudaStream = CUstream_st*;
using CudaEvent = CUevent_st*;

// The number of CUDA devices this process sees (0 when there is no driver
// or no device; never throws).
int cuda_device_count();

class DeviceContext {
 public:
  // Creates the compute stream on GPU `device_index`; throws ctp::Error when
  // that device does not exist.
  explicit DeviceContext(int device_index);
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  Device device() const { return Device{DeviceKind::CUDA, index_}; }
  int index() const { return index_; }
  // Makes this GPU the calling thread's current device.
  void make_current() const;

  CudaStream compute_stream() const { return compute_; }
  // The ring's communication stream, created on first use.
  CudaStream comm_stream(int ring_id);
  std::vector<int> comm_rings() const;
  cublasContext* cublas();
  // The cuDNN handle bound to the compute stream, created on first use.
  cudnnContext* cudnn();

  // GPU-side ordering: `waiter` runs nothing queued after this call until
  // everything queued on `signaller` before it has finished.
  void stream_wait(CudaStream waiter, CudaStream signaller);
  // c_sync_calc_stream: every communication stream waits for the compute stream.
  void comm_streams_wait_for_compute();
  // c_sync_comm_stream: the compute stream waits for one ring's stream.
  void compute_waits_for_comm(int ring_id);

  // Scratch device memory for kernels queued on the compute stream (partial
  // sums), valid until the next call: stream order keeps one kernel's use
  // ahead of the next's, as cuBLAS's workspace. Grow-only; growing waits
  // for the compute stream. Throws ctp::Error when the GPU is out of memory.
  void* compute_workspace(std::size_t bytes);

  // FP32 convolutions may run in TF32 on tensor cores (10-bit mantissa
  // products, FP32 sums), as PyTorch's cuDNN convolutions do by default
  // (torch.backends.cudnn.allow_tf32). Off by default: ctp's FP32 results
  // then agree with the CPU's to FP32 rounding. Inline, so that callers
  // without CUDA (the CLI) can set it on a loaded backend's context.
  bool conv_tf32() const { return conv_tf32_; }
  void set_conv_tf32(bool allowed) { conv_tf32_ = allowed; }

  // Kernel choices that cost a search (cuDNN's convolution algorithms, found
  // by timing each once), cached for the run under a key the kernel makes
  // from its shapes; nullopt when `key` has no choice yet.
  struct AlgorithmChoice {
    int algorithm = 0;
    int math_type = 0;
    std::size_t workspace_bytes = 0;
  };
  std::optional<AlgorithmChoice> find_algorithm(const std::string& key) const;
  void remember_algorithm(const std::string& key, AlgorithmChoice choice);
  std::size_t algorithm_choice_count() const;

  // Objects a kernel builds once per shape and keeps for the run (cuDNN's
  // execution plans of 16-bit convolutions), under a key the kernel makes;
  // nullptr when `key` has none. Released before the context's handles.
  std::shared_ptr<void> find_kernel_state(const std::string& key) const;
  void remember_kernel_state(const std::string& key, std::shared_ptr<void> state);
  std::size_t kernel_state_count() const;

  // Host side: blocks until every stream of this device is idle.
  void synchronize();

  // Copies a tensor to this GPU, queued on the compute stream.
  Tensor to_device(const Tensor& tensor);
  // Copies a tensor of any device to host memory once every stream of this
  // device is idle (so results of pending collectives are included).
  Tensor to_host(const Tensor& tensor);

 private:
  CudaEvent next_event();

  int index_;
  CudaStream compute_ = nullptr;
  cublasContext* cublas_ = nullptr;
  cudnnContext* cudnn_ = nullptr;
  mutable std::mutex mu_;
  std::map<int, CudaStream> comm_;
  // Events are recycled round-robin: an event may be re-recorded once every
  // wait on its previous record has been queued (cudaStreamWaitEvent
  // captures the record at call time).
  std::vector<CudaEvent> events_;
  std::size_t next_event_ = 0;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  bool conv_tf32_ = false;
  std::map<std::string, AlgorithmChoice> algorithms_;  // guarded by mu_
  std::map<std::string, std::shared_ptr<void>> kernel_states_;  // guarded by mu_
};

namespace cuda {
// A zero-filled CPU buffer in page-locked memory (cudaHostAlloc, portable to
// every GPU); throws ctp::Error when the driver refuses.
std::shared_ptr<Buffer> allocate_pinned_host_buffer(std::size_t bytes);
// GPU memory whose bytes are not set: for a kernel's output, which the kernel
// writes whole (as PyTorch's empty()), where zero-filling would cost a pass
// over the memory on every (re)allocation. With set_poison_uninitialized
// (tests), every byte starts as 0xff (NaN in every float type), so an output
// a kernel leaves partly unwritten shows.
std::shared_ptr<Buffer> allocate_uninitialized_buffer(Device device, std::size_t bytes);
void set_poison_uninitialized(bool poison);
// A DeviceContext's compute stream, on which that GPU's buffers are then made
// and freed while it is the device's only one (executor/cuda/cuda_buffer.cc);
// removed before the stream is destroyed.
void add_allocation_stream(int device, CudaStream stream);
void remove_allocation_stream(int device, CudaStream stream);
}  // namespace cuda

// Copies `src` into `dst` (same byte count) across any pair of devices,
// queued on `stream` when either side is a GPU.
void copy_bytes(const Tensor& src, Tensor& dst, CudaStream stream);

}  // namespace ctp
