// Device backends, registered per device kind: what the runtime needs from a
// kind of device beyond its kernels and its allocator. A DeviceSession is one
// device's state for a run (on a GPU: its streams and cuBLAS handle, the
// DeviceContext that RunServices::device_context points to): it moves host
// data to the device and back, waits for the device, and times ops on it
// (OpProfile). DeviceRuntime (device_runtime.h) is what callers hold.
//
// The CPU's backend is built into the runtime; CUDA's registers itself when
// libctp_cuda is loaded, on the first request for a GPU
// (executor/runtime/backend_library.h).
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "executor/runtime/tensor.h"

namespace ctp {

class CommunicatorManager;
class DeviceContext;

// Device-side times of a step's ops, for OpProfile. Event `boundary`
// (0 .. op count) marks the start of op `boundary` and the end of the op
// before it.
class OpTimer {
 public:
  virtual ~OpTimer() = default;
  virtual void record(std::size_t boundary) = 0;
  // Waits for event `last_boundary`, then adds each op's time (ms) between
  // its two events to `totals` (sized to the op count).
  virtual void accumulate(std::size_t last_boundary, std::vector<double>& totals) = 0;
};

class DeviceSession {
 public:
  virtual ~DeviceSession() = default;
  // For RunServices::device_context: null where kernels need none (CPU).
  virtual DeviceContext* context() = 0;
  // Sets `var` to `value` on this device; a device buffer is reused when
  // dtype and shape match, the copy queued behind the device's work.
  virtual void bind(Tensor& var, const Tensor& value) = 0;
  // A zero-filled host tensor that binds fast (on a GPU: page-locked).
  virtual Tensor host_tensor(DataType dtype, std::vector<int64_t> shape) = 0;
  // A copy of `value` on this device.
  virtual Tensor copy_to_device(const Tensor& value) = 0;
  // Blocks until the device is idle; with `comms`, polls its rings for
  // asynchronous errors and aborts them after their timeout.
  virtual void synchronize(CommunicatorManager* comms) = 0;
  // `value` (not in host memory) copied to host memory once the device's
  // queued work is done.
  virtual Tensor to_host(const Tensor& value) = 0;
  // A timer of ops on this device; null where only host times exist (CPU).
  virtual std::unique_ptr<OpTimer> make_op_timer() = 0;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual std::string name() const = 0;  // "cpu", "cuda"
  // Throws ctp::Error when `device` does not exist.
  virtual std::unique_ptr<DeviceSession> open(Device device) = 0;
};

class DeviceBackendRegistry {
 public:
  // `load` is called, outside the registry's lock, when a device kind with no
  // backend is asked for (the global registry: load_device_backend).
  explicit DeviceBackendRegistry(std::function<void(DeviceKind)> load = nullptr);
  static DeviceBackendRegistry& global();

  // Throws ctp::Error when `kind` has a backend already.
  void add(DeviceKind kind, std::shared_ptr<DeviceBackend> backend);
  // Loads kind's backend when needed; throws ctp::Error when there is none.
  DeviceBackend& get(DeviceKind kind);
  // The registered backend or null; loads nothing.
  DeviceBackend* find(DeviceKind kind) const;

 private:
  std::function<void(DeviceKind)> load_;
  mutable std::mutex mu_;
  std::shared_ptr<DeviceBackend> backends_[kDeviceKindCount];
};

// Registers a device backend at load time, from its own folder:
//   CTP_REGISTER_DEVICE_BACKEND(CUDA, std::make_shared<CudaDeviceBackend>());
#define CTP_DEVICE_BACKEND_CONCAT2(a, b) a##b
#define CTP_DEVICE_BACKEND_CONCAT(a, b) CTP_DEVICE_BACKEND_CONCAT2(a, b)
#define CTP_REGISTER_DEVICE_BACKEND(device_kind, backend)                                    \
  static const bool CTP_DEVICE_BACKEND_CONCAT(ctp_device_backend_registered_, __LINE__) = [] { \
    ::ctp::DeviceBackendRegistry::global().add(::ctp::DeviceKind::device_kind, backend);     \
    return true;                                                                             \
  }()

}  // namespace ctp
