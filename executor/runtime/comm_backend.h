// Communicator backends behind one interface, registered per device kind
// (PyTorch c10d's Backend registration is the model). The kernels that set
// rings up (ops/common/collective_init.h) ask the registry for the backend of
// their run's device kind and of the ring's span, and never name one. Today:
// Gloo connects CPU rings across processes, the in-process thread group CPU
// rings among one process's device threads, NCCL GPU rings of both spans.
//
// A backend registers itself from its own folder when its library is loaded
// (CTP_REGISTER_COMM_BACKEND); a device kind whose backends live in a library
// loaded on demand (CUDA's, executor/runtime/backend_library.h) is loaded on
// the first request for it.
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "executor/runtime/communicator.h"

namespace ctp {

class DeviceContext;  // a run's device state (RunServices::device_context)

// Where a ring's ranks are: one per process (c_comm_init,
// c_comm_init_multitrainer), or the device threads of this process
// (c_comm_init_all).
enum class RingSpan { Processes, Threads };
inline constexpr int kRingSpanCount = 2;
// "across processes", "among device threads"
std::string_view to_string(RingSpan span);

// What a backend needs to make a new ring's unique id.
struct RingIdRequest {
  // This worker's endpoint ("host:port"; empty for a ring among threads).
  std::string endpoint;
  // Keeps what the id refers to alive as long as the rings (Gloo: rank 0's
  // rendezvous store).
  CommunicatorManager* comms = nullptr;
};

// One rank joining a ring.
struct RingSetup {
  std::string unique_id;  // what make_unique_id made; the same bytes on every rank
  int rank = 0;
  int size = 1;
  int ring_id = 0;
  // The caller's: options, endpoint, thread group; never null.
  CommunicatorManager* comms = nullptr;
  // The run's device state; null on the CPU.
  DeviceContext* device_context = nullptr;
};

class CommBackend {
 public:
  virtual ~CommBackend() = default;
  // "gloo", "nccl", "threads": what its communicators' backend() say.
  virtual std::string name() const = 0;
  // A fresh unique id for a new ring, made by one rank (rank 0 across
  // processes, local rank 0 among threads) and handed to the others.
  virtual std::string make_unique_id(const RingIdRequest& request) = 0;
  // Joins the ring. Throws ctp::Error naming the rank, the ring and the
  // backend when the id is not this backend's or the peers do not come.
  virtual std::unique_ptr<Communicator> connect(const RingSetup& setup) = 0;
};

// How the ranks of a ring across processes agree on its unique id: rank 0
// sends the id it made to every other rank's endpoint, where each waits for
// it (c10d's Store plays this part). The TCP exchange of executor/rendezvous/
// registers itself; endpoints are "host:port".
class RingIdExchange {
 public:
  virtual ~RingIdExchange() = default;
  // Throws ctp::Error naming the attribute ('endpoint', 'other_endpoints')
  // when an endpoint is malformed; c_gen_nccl_id checks before anything else.
  virtual void check_endpoints(const std::string& self, const std::vector<std::string>& peers) = 0;
  virtual void send(const std::vector<std::string>& peers, const std::string& id,
                    const CommOptions& options) = 0;
  virtual std::string receive(const std::string& self, const CommOptions& options) = 0;
};

class CommBackendRegistry {
 public:
  // `load` is called, outside the registry's lock, when a device kind with no
  // backend registered is asked for (the global registry loads that kind's
  // library: load_device_backend).
  explicit CommBackendRegistry(std::function<void(DeviceKind)> load = nullptr);
  static CommBackendRegistry& global();

  // Throws ctp::Error when (kind, span) has a backend already.
  void add(DeviceKind kind, RingSpan span, std::shared_ptr<CommBackend> backend);
  // The backend of rings of `span` on `kind`. Throws ctp::Error naming the
  // device kind, the span and what is registered when there is none.
  CommBackend& get(DeviceKind kind, RingSpan span);
  // The backend's name, or "" when none is registered (loads nothing).
  std::string name_of(DeviceKind kind, RingSpan span) const;

  // Throws ctp::Error when an exchange is set already.
  void set_id_exchange(std::shared_ptr<RingIdExchange> exchange);
  RingIdExchange& id_exchange();

 private:
  std::string registered() const;  // caller holds mu_

  std::function<void(DeviceKind)> load_;
  mutable std::mutex mu_;
  std::shared_ptr<CommBackend> backends_[kDeviceKindCount][kRingSpanCount];
  std::shared_ptr<RingIdExchange> exchange_;
};

// Registers a backend at load time, from its own folder:
//   CTP_REGISTER_COMM_BACKEND(CPU, Processes, std::make_shared<GlooBackend>());
#define CTP_COMM_BACKEND_CONCAT2(a, b) a##b
#define CTP_COMM_BACKEND_CONCAT(a, b) CTP_COMM_BACKEND_CONCAT2(a, b)
#define CTP_REGISTER_COMM_BACKEND(device_kind, span, backend)                                   \
  static const bool CTP_COMM_BACKEND_CONCAT(ctp_comm_backend_registered_, __LINE__) = [] {      \
    ::ctp::CommBackendRegistry::global().add(::ctp::DeviceKind::device_kind,                    \
                                             ::ctp::RingSpan::span, backend);                   \
    return true;                                                                                \
  }()

}  // namespace ctp
