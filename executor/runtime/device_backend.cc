#include "executor/runtime/device_backend.h"

#include "executor/runtime/backend_library.h"
#include "program_ir/error.h"

namespace ctp {

DeviceBackendRegistry::DeviceBackendRegistry(std::function<void(DeviceKind)> load)
    : load_(std::move(load)) {}

DeviceBackendRegistry& DeviceBackendRegistry::global() {
  static DeviceBackendRegistry registry(load_device_backend);
  return registry;
}

void DeviceBackendRegistry::add(DeviceKind kind, std::shared_ptr<DeviceBackend> backend) {
  if (!backend) throw Error("a null device backend cannot be registered");
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = backends_[static_cast<int>(kind)];
  if (slot)
    throw Error("two device backends for " + std::string(to_string(kind)) + ": " +
                slot->name() + " and " + backend->name());
  slot = std::move(backend);
}

DeviceBackend* DeviceBackendRegistry::find(DeviceKind kind) const {
  std::lock_guard<std::mutex> lock(mu_);
  return backends_[static_cast<int>(kind)].get();
}

DeviceBackend& DeviceBackendRegistry::get(DeviceKind kind) {
  if (DeviceBackend* backend = find(kind)) return *backend;
  if (load_) load_(kind);  // not under the lock: the library registers its backend
  if (DeviceBackend* backend = find(kind)) return *backend;
  throw Error("no device backend for " + std::string(to_string(kind)) + " is registered");
}

}  // namespace ctp
