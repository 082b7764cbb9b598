#include "executor/runtime/device_runtime.h"

#include "program_ir/error.h"

namespace ctp {

DeviceRuntime::DeviceRuntime(Device device) : device_(device) {
  try {
    session_ = DeviceBackendRegistry::global().get(device.kind).open(device);
  } catch (const Error& e) {
    throw Error("cannot run on " + device.to_string() + ": " + e.what());
  }
}

DeviceRuntime::~DeviceRuntime() = default;

void DeviceRuntime::bind(Scope& scope, const std::string& name, const Tensor& value) {
  session_->bind(scope.var(name), value);
}

Tensor DeviceRuntime::host_tensor(DataType dtype, std::vector<int64_t> shape) const {
  return session_->host_tensor(dtype, std::move(shape));
}

Tensor DeviceRuntime::copy_to_device(const Tensor& value) { return session_->copy_to_device(value); }

void DeviceRuntime::synchronize(CommunicatorManager* comms) { session_->synchronize(comms); }

Tensor DeviceRuntime::to_host(const Tensor& value, CommunicatorManager* comms) {
  if (value.device().kind == DeviceKind::CPU) return value;
  synchronize(comms);
  return session_->to_host(value);
}

}  // namespace ctp
