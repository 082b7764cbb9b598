// The host's side of running programs on one device, for code that must not
// depend on the CUDA backend being built (ProgramRunner, `ctp run`, the sample
// trainer): on a GPU it owns the DeviceContext (compute stream, ring streams,
// cuBLAS handle) that RunServices::device_context points to, moves host data
// (fed batches, synthetic inputs) into the scope's device buffers, and brings
// results back to host memory. On the CPU every operation is a plain copy or
// a no-op, so callers are written once for both.
//
// A DeviceRuntime must outlive every CommunicatorManager whose rings run on
// it (NCCL rings use its streams): declare it first.
#pragma once
#include <string>
#include <vector>

#include "executor/runtime/scope.h"

namespace ctp {

class CommunicatorManager;
class DeviceContext;

class DeviceRuntime {
 public:
  // CPU: nothing to set up. CUDA: creates the device's streams; throws
  // ctp::Error when the GPU does not exist or this build has no CUDA backend.
  explicit DeviceRuntime(Device device);
  ~DeviceRuntime();
  DeviceRuntime(const DeviceRuntime&) = delete;
  DeviceRuntime& operator=(const DeviceRuntime&) = delete;

  Device device() const { return device_; }
  // For RunServices::device_context: null on the CPU.
  DeviceContext* context() const { return context_; }

  // Sets scope var `name` to `value` on this device. On a GPU the var's
  // device buffer is reused when dtype and shape match (so feeding a batch
  // each step allocates nothing), the copy queued on the compute stream.
  void bind(Scope& scope, const std::string& name, const Tensor& value);
  // A zero-filled host tensor that binds fast: on a GPU in page-locked
  // memory (the copy engines read it directly), on the CPU a plain tensor.
  Tensor host_tensor(DataType dtype, std::vector<int64_t> shape) const;
  // A copy of `value` on this device (on the CPU: a deep copy).
  Tensor copy_to_device(const Tensor& value);
  // Blocks until every stream of the device is idle; with `comms`, polls its
  // NCCL rings for asynchronous errors and aborts them after their timeout
  // instead of hanging.
  void synchronize(CommunicatorManager* comms);
  // `value` in host memory, once the work queued before it has finished
  // (synchronize(comms) first). On the CPU: `value` itself, shared.
  Tensor to_host(const Tensor& value, CommunicatorManager* comms);

 private:
  Device device_;
  DeviceContext* context_ = nullptr;  // owned; deleted where the backend is built
};

}  // namespace ctp
