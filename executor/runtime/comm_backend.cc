#include "executor/runtime/comm_backend.h"

#include "executor/runtime/backend_library.h"
#include "program_ir/error.h"

namespace ctp {

std::string_view to_string(RingSpan span) {
  switch (span) {
    case RingSpan::Processes: return "across processes";
    case RingSpan::Threads: return "among device threads";
  }
  return "?";
}

CommBackendRegistry::CommBackendRegistry(std::function<void(DeviceKind)> load)
    : load_(std::move(load)) {}

CommBackendRegistry& CommBackendRegistry::global() {
  static CommBackendRegistry registry(load_device_backend);
  return registry;
}

void CommBackendRegistry::add(DeviceKind kind, RingSpan span,
                              std::shared_ptr<CommBackend> backend) {
  if (!backend) throw Error("a null communicator backend cannot be registered");
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = backends_[static_cast<int>(kind)][static_cast<int>(span)];
  if (slot)
    throw Error("two communicator backends for " + std::string(to_string(kind)) + " rings " +
                std::string(to_string(span)) + ": " + slot->name() + " and " + backend->name());
  slot = std::move(backend);
}

CommBackend& CommBackendRegistry::get(DeviceKind kind, RingSpan span) {
  const auto find = [&]() -> CommBackend* {
    std::lock_guard<std::mutex> lock(mu_);
    return backends_[static_cast<int>(kind)][static_cast<int>(span)].get();
  };
  if (CommBackend* backend = find()) return *backend;
  // Not under the lock: the library being loaded registers its backends.
  if (load_) load_(kind);
  if (CommBackend* backend = find()) return *backend;
  std::lock_guard<std::mutex> lock(mu_);
  throw Error("no communicator backend connects " + std::string(to_string(kind)) + " rings " +
              std::string(to_string(span)) + " in this build (registered: " + registered() +
              "; `ctp --version` lists the backends)");
}

std::string CommBackendRegistry::name_of(DeviceKind kind, RingSpan span) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto& backend = backends_[static_cast<int>(kind)][static_cast<int>(span)];
  return backend ? backend->name() : "";
}

std::string CommBackendRegistry::registered() const {
  std::string out;
  for (int k = 0; k < kDeviceKindCount; ++k)
    for (int s = 0; s < kRingSpanCount; ++s)
      if (const auto& backend = backends_[k][s])
        out += (out.empty() ? "" : ", ") + backend->name() + " for " +
               std::string(to_string(static_cast<DeviceKind>(k))) + " rings " +
               std::string(to_string(static_cast<RingSpan>(s)));
  return out.empty() ? "none" : out;
}

void CommBackendRegistry::set_id_exchange(std::shared_ptr<RingIdExchange> exchange) {
  if (!exchange) throw Error("a null unique-id exchange cannot be registered");
  std::lock_guard<std::mutex> lock(mu_);
  if (exchange_) throw Error("a unique-id exchange is registered already");
  exchange_ = std::move(exchange);
}

RingIdExchange& CommBackendRegistry::id_exchange() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!exchange_)
    throw Error("no unique-id exchange is registered: the rendezvous library "
                "(executor/rendezvous/) is not loaded");
  return *exchange_;
}

}  // namespace ctp
