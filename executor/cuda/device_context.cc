#include "executor/cuda/device_context.h"

#include <algorithm>
#include <cstring>

#include "executor/cuda/cuda_check.h"
#include "executor/cuda/cudnn_check.h"

namespace ctp {

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

DeviceContext::DeviceContext(int device_index) : index_(device_index) {
  const int count = cuda_device_count();
  if (device_index < 0 || device_index >= count)
    throw Error("gpu:" + std::to_string(device_index) + " does not exist: this process sees " +
                std::to_string(count) + " CUDA device(s)");
  cuda::DeviceGuard guard(index_);
  // Blocking streams (default flags) wait for the legacy default stream,
  // on which buffers are made and zero-filled while several contexts share
  // this GPU; with one, on its compute stream.
  CTP_CUDA_CHECK(cudaStreamCreate(&compute_));
  events_.resize(64, nullptr);
  for (CudaEvent& e : events_) CTP_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  cuda::add_allocation_stream(index_, compute_);
}

DeviceContext::~DeviceContext() {
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(index_);
  cudaDeviceSynchronize();
  if (compute_) cuda::remove_allocation_stream(index_, compute_);
  if (workspace_) cudaFree(workspace_);
  kernel_states_.clear();  // execution plans refer to the cuDNN handle
  if (cublas_) cublasDestroy(cublas_);
  if (cudnn_) cudnnDestroy(cudnn_);
  for (CudaEvent e : events_)
    if (e) cudaEventDestroy(e);
  for (auto& [ring, stream] : comm_) cudaStreamDestroy(stream);
  if (compute_) cudaStreamDestroy(compute_);
  cudaSetDevice(previous);
}

void DeviceContext::make_current() const {
  int current = -1;
  CTP_CUDA_CHECK(cudaGetDevice(&current));
  if (current != index_) CTP_CUDA_CHECK(cudaSetDevice(index_));
}

CudaStream DeviceContext::comm_stream(int ring_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = comm_.find(ring_id);
  if (it != comm_.end()) return it->second;
  cuda::DeviceGuard guard(index_);
  int least = 0, greatest = 0;
  CTP_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  CudaStream stream = nullptr;
  // Communication gets the higher priority so that, as backward compute keeps
  // the GPU busy, the all-reduce kernels still get their SMs promptly.
  CTP_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamDefault, greatest));
  comm_.emplace(ring_id, stream);
  return stream;
}

std::vector<int> DeviceContext::comm_rings() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> out;
  for (const auto& [ring, stream] : comm_) out.push_back(ring);
  return out;
}

cublasContext* DeviceContext::cublas() {
  if (!cublas_) {
    cuda::DeviceGuard guard(index_);
    CTP_CUBLAS_CHECK(cublasCreate(&cublas_));
    CTP_CUBLAS_CHECK(cublasSetStream(cublas_, compute_));
    // FP32 GEMMs stay in true FP32 (no TF32) so results agree with the CPU kernels.
    CTP_CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
  }
  return cublas_;
}

cudnnContext* DeviceContext::cudnn() {
  if (!cudnn_) {
    cuda::DeviceGuard guard(index_);
    CTP_CUDNN_CHECK(cudnnCreate(&cudnn_));
    CTP_CUDNN_CHECK(cudnnSetStream(cudnn_, compute_));
  }
  return cudnn_;
}

CudaEvent DeviceContext::next_event() {
  std::lock_guard<std::mutex> lock(mu_);
  CudaEvent e = events_[next_event_];
  next_event_ = (next_event_ + 1) % events_.size();
  return e;
}

void DeviceContext::stream_wait(CudaStream waiter, CudaStream signaller) {
  if (waiter == signaller) return;
  cuda::DeviceGuard guard(index_);
  CudaEvent e = next_event();
  CTP_CUDA_CHECK(cudaEventRecord(e, signaller));
  CTP_CUDA_CHECK(cudaStreamWaitEvent(waiter, e, 0));
}

void DeviceContext::comm_streams_wait_for_compute() {
  for (int ring : comm_rings()) stream_wait(comm_stream(ring), compute_);
}

void DeviceContext::compute_waits_for_comm(int ring_id) {
  stream_wait(compute_, comm_stream(ring_id));
}

void* DeviceContext::compute_workspace(std::size_t bytes) {
  if (bytes <= workspace_bytes_) return workspace_;
  cuda::DeviceGuard guard(index_);
  // Kernels queued before may still read the old block.
  CTP_CUDA_CHECK(cudaStreamSynchronize(compute_));
  // Grows by doubling at least, so a run settles after a few steps.
  const std::size_t grown = std::max({bytes, 2 * workspace_bytes_, std::size_t{1} << 20});
  if (workspace_) CTP_CUDA_CHECK(cudaFree(workspace_));
  workspace_ = nullptr;
  workspace_bytes_ = 0;
  cudaError_t status = cudaMalloc(&workspace_, grown);
  if (status != cudaSuccess) {
    cudaGetLastError();
    workspace_ = nullptr;
    throw Error("cannot allocate a " + std::to_string(grown) + "-byte kernel workspace on gpu:" +
                std::to_string(index_) + ": " + cudaGetErrorString(status));
  }
  workspace_bytes_ = grown;
  return workspace_;
}

std::optional<DeviceContext::AlgorithmChoice> DeviceContext::find_algorithm(
    const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = algorithms_.find(key);
  if (it == algorithms_.end()) return std::nullopt;
  return it->second;
}

void DeviceContext::remember_algorithm(const std::string& key, AlgorithmChoice choice) {
  std::lock_guard<std::mutex> lock(mu_);
  algorithms_[key] = choice;
}

std::size_t DeviceContext::algorithm_choice_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return algorithms_.size();
}

std::shared_ptr<void> DeviceContext::find_kernel_state(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernel_states_.find(key);
  return it == kernel_states_.end() ? nullptr : it->second;
}

void DeviceContext::remember_kernel_state(const std::string& key, std::shared_ptr<void> state) {
  std::lock_guard<std::mutex> lock(mu_);
  kernel_states_[key] = std::move(state);
}

std::size_t DeviceContext::kernel_state_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kernel_states_.size();
}

void DeviceContext::synchronize() {
  cuda::DeviceGuard guard(index_);
  CTP_CUDA_CHECK(cudaStreamSynchronize(compute_));
  for (int ring : comm_rings()) CTP_CUDA_CHECK(cudaStreamSynchronize(comm_stream(ring)));
}

void copy_bytes(const Tensor& src, Tensor& dst, CudaStream stream) {
  if (src.bytes() != dst.bytes())
    throw Error("copy of " + std::to_string(src.bytes()) + " bytes into a tensor of " +
                std::to_string(dst.bytes()));
  if (src.bytes() == 0) return;
  const bool src_gpu = src.device().kind == DeviceKind::CUDA;
  const bool dst_gpu = dst.device().kind == DeviceKind::CUDA;
  if (!src_gpu && !dst_gpu) {
    std::memcpy(dst.raw_data(), src.raw_data(), src.bytes());
    return;
  }
  cudaMemcpyKind kind = src_gpu ? (dst_gpu ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                                : cudaMemcpyHostToDevice;
  CTP_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), src.bytes(), kind, stream));
  // Host memory is pageable: it must not change or vanish before the copy runs.
  if (!src_gpu || !dst_gpu) CTP_CUDA_CHECK(cudaStreamSynchronize(stream));
}

Tensor DeviceContext::to_device(const Tensor& tensor) {
  cuda::DeviceGuard guard(index_);
  Tensor out(tensor.dtype(), tensor.shape(), device());
  copy_bytes(tensor, out, compute_);
  return out;
}

Tensor DeviceContext::to_host(const Tensor& tensor) {
  cuda::DeviceGuard guard(index_);
  Tensor out(tensor.dtype(), tensor.shape());
  if (tensor.device().kind == DeviceKind::CUDA) {
    // The tensor may be the result of a collective still running on a ring's
    // stream: the copy on the compute stream waits for those first.
    for (int ring : comm_rings()) stream_wait(compute_, comm_stream(ring));
  }
  copy_bytes(tensor, out, compute_);
  return out;
}

}  // namespace ctp
