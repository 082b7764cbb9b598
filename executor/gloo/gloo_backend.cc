// The Gloo communicator backend: CPU rings across processes. A ring's unique
// id is the address of a rendezvous store that rank 0 hosts (plus a random
// token); the ranks find each other through it (gloo_communicator.h).
#include "executor/gloo/gloo_communicator.h"
#include "executor/runtime/comm_backend.h"

namespace ctp {
namespace {

class GlooBackend final : public CommBackend {
 public:
  std::string name() const override { return "gloo"; }

  std::string make_unique_id(const RingIdRequest& request) override {
    const net::Endpoint self = net::parse_endpoint(request.endpoint, "attribute 'endpoint'");
    auto store = std::make_shared<StoreServer>(self.host, 0, random_token());
    request.comms->keep_alive(store);
    return StoreAddress{net::Endpoint{self.host, store->port()}, store->token()}.to_bytes();
  }

  std::unique_ptr<Communicator> connect(const RingSetup& ring) override {
    const CommunicatorManager& m = *ring.comms;
    GlooRingSetup setup;
    try {
      setup.store = StoreAddress::from_bytes(ring.unique_id);
    } catch (Error& e) {
      e.locate(SourceLocation{
          .rank = ring.rank, .nranks = ring.size, .ring = ring.ring_id, .backend = "gloo"});
      throw;
    }
    setup.rank = ring.rank;
    setup.size = ring.size;
    setup.ring_id = ring.ring_id;
    if (!m.endpoint().empty()) {
      setup.bind_host = net::parse_endpoint(m.endpoint()).host;
      setup.label = m.endpoint();
      if (m.local_size() > 1) setup.label += " thread " + std::to_string(m.local_rank());
    }
    setup.options = m.options();
    return connect_gloo_ring(setup);
  }
};

}  // namespace

CTP_REGISTER_COMM_BACKEND(CPU, Processes, std::make_shared<GlooBackend>());

}  // namespace ctp
