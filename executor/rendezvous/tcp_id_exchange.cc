// The unique-id exchange of rings across processes, registered for every
// communicator backend: rank 0 sends the id over TCP, the others listen at
// their own endpoints (rendezvous.h).
#include "executor/rendezvous/rendezvous.h"
#include "executor/runtime/comm_backend.h"

namespace ctp {
namespace {

class TcpIdExchange final : public RingIdExchange {
 public:
  void check_endpoints(const std::string& self, const std::vector<std::string>& peers) override {
    net::parse_endpoint(self, "attribute 'endpoint'");
    parse_peers(peers);
  }

  void send(const std::vector<std::string>& peers, const std::string& id,
            const CommOptions& options) override {
    send_unique_id(parse_peers(peers), id, exchange_options(options));
  }

  std::string receive(const std::string& self, const CommOptions& options) override {
    return receive_unique_id(net::parse_endpoint(self, "attribute 'endpoint'"),
                             exchange_options(options));
  }

 private:
  static std::vector<net::Endpoint> parse_peers(const std::vector<std::string>& peers) {
    std::vector<net::Endpoint> endpoints;
    for (const std::string& peer : peers)
      endpoints.push_back(net::parse_endpoint(peer, "attribute 'other_endpoints'"));
    return endpoints;
  }
  static IdExchangeOptions exchange_options(const CommOptions& options) {
    return IdExchangeOptions{options.timeout, options.retry_interval, options.job_id};
  }
};

const bool registered = [] {
  CommBackendRegistry::global().set_id_exchange(std::make_shared<TcpIdExchange>());
  return true;
}();

}  // namespace
}  // namespace ctp
