// The unique-id exchange of c_gen_nccl_id, as Paddle does it: rank 0 makes
// the communicator's unique id and sends it over TCP to every other
// endpoint; every other rank listens at its own endpoint until the id comes.
// Rank 0 retries a peer that is not up yet until the timeout, then names
// every endpoint that never answered. The id's bytes are opaque here: each
// backend decides what they hold (Gloo: the address of a rendezvous store,
// NCCL: an ncclUniqueId).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "executor/rendezvous/rendezvous_socket.h"

namespace ctp {

struct IdExchangeOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  // Pause between connection attempts to a peer that is not listening yet.
  std::chrono::milliseconds retry_interval{50};
  // The job this rank belongs to (CTP_JOB_ID, set by ctp launch): a
  // receiver takes the id only from rank 0 of its own job, so a worker never
  // joins another job's ring on the same ports; a sender that reaches a
  // worker of another job fails at once, naming both jobs.
  std::string job_id;
};

// Rank 0's side. Returns when every peer has acknowledged the id; throws
// ctp::Error naming the endpoints that did not, once the timeout has passed,
// or at once when an endpoint is held by a worker of another job.
void send_unique_id(const std::vector<net::Endpoint>& peers, const std::string& id,
                    const IdExchangeOptions& options);

// Another rank's side: listens on `self`'s port until rank 0 delivers an id.
// Throws ctp::Error naming `self` when the port cannot be listened on or no
// id arrives within the timeout.
std::string receive_unique_id(const net::Endpoint& self, const IdExchangeOptions& options);

}  // namespace ctp
