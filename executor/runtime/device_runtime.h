// The host's side of running programs on one device, for code written once
// for every kind of device (ProgramRunner, `ctp run`, the sample trainer): it
// opens the device's session from the backend registered for its kind
// (executor/runtime/device_backend.h; CUDA's library is loaded on the first
// request for a GPU), which on a GPU owns the DeviceContext (compute stream,
// ring streams, cuBLAS handle) that RunServices::device_context points to. It
// moves host data (fed batches, synthetic inputs) into the scope's device
// buffers and brings results back to host memory. On the CPU every operation
// is a plain copy or a no-op.
//
// A DeviceRuntime must outlive every CommunicatorManager whose rings run on
// it (NCCL rings use its streams): declare it first.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "executor/runtime/device_backend.h"
#include "executor/runtime/scope.h"

namespace ctp {

class DeviceRuntime {
 public:
  // CPU: nothing to set up. A GPU: creates the device's streams; throws
  // ctp::Error when the GPU does not exist or its backend cannot be loaded.
  explicit DeviceRuntime(Device device);
  ~DeviceRuntime();
  DeviceRuntime(const DeviceRuntime&) = delete;
  DeviceRuntime& operator=(const DeviceRuntime&) = delete;

  Device device() const { return device_; }
  // For RunServices::device_context: null on the CPU.
  DeviceContext* context() const { return session_->context(); }
  // For RunServices::device_session.
  DeviceSession* session() const { return session_.get(); }

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
  // rings for asynchronous errors and aborts them after their timeout
  // instead of hanging.
  void synchronize(CommunicatorManager* comms);
  // `value` in host memory, once the work queued before it has finished
  // (synchronize(comms) first). On the CPU: `value` itself, shared.
  Tensor to_host(const Tensor& value, CommunicatorManager* comms);
  // For OpProfile: a timer of ops on this device, null on the CPU.
  std::unique_ptr<OpTimer> make_op_timer() const { return session_->make_op_timer(); }

 private:
  Device device_;
  std::unique_ptr<DeviceSession> session_;
};

}  // namespace ctp
