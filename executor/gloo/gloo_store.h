// Gloo's rendezvous::Store over ctp's StoreClient, so that Gloo's full-mesh
// set-up meets through the store rank 0 hosts (and its waits have our
// timeout instead of Gloo's fixed 30 s default).
#pragma once
#include <gloo/rendezvous/store.h>

#include <memory>
#include <string>
#include <vector>

#include "executor/rendezvous/rendezvous_store.h"

namespace ctp {

class GlooStore final : public gloo::rendezvous::Store {
 public:
  GlooStore(std::shared_ptr<StoreClient> client, std::string prefix)
      : client_(std::move(client)), prefix_(std::move(prefix)) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    client_->set(prefix_ + key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    wait({key});
    std::string v = client_->get(prefix_ + key);
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, client_->timeout()); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    std::vector<std::string> full;
    full.reserve(keys.size());
    for (const auto& k : keys) full.push_back(prefix_ + k);
    // Gloo passes its own default (30 s); the communicator's timeout rules.
    (void)timeout;
    try {
      client_->wait(full, client_->timeout());
    } catch (const Error&) {
      // Gloo's keys are the ranks: name the ones that never arrived.
      std::string missing;
      for (std::size_t i = 0; i < keys.size(); ++i)
        if (!client_->try_get(full[i])) missing += (missing.empty() ? "" : ", ") + keys[i];
      throw Error("peer rank " + missing + " did not join the ring within " +
                  net::duration_text(client_->timeout()) +
                  " (it is not running, failed earlier, or runs a different program)");
    }
  }

 private:
  std::shared_ptr<StoreClient> client_;
  std::string prefix_;
};

}  // namespace ctp
