// Liveness of a ring's peers, watched by every rank directly: each rank
// listens on its own address and connects to every other rank, and a thread
// sends a heartbeat on every connection each interval. So every survivor
// can tell, without asking anyone (in particular not rank 0, whose store
// would freeze with it), which peer died (its connections closed without a
// goodbye), which stalled (connected, but silent: its process is stopped or
// hung), and which left (closed its communicator, after a failure of its own
// or because it finished).
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "executor/rendezvous/rendezvous_socket.h"

namespace ctp {

class PeerLiveness {
 public:
  enum class State { kAlive, kStalled, kDied, kLeftAfterFailure, kLeft };
  struct Peer {
    int rank = -1;
    std::string label;  // its endpoint, as it introduced itself
    State state = State::kAlive;
    std::chrono::milliseconds silent{0};  // since its last heartbeat
  };

  // Listens on `host` (a free port). `token` admits only this ring's ranks;
  // `interval` is the heartbeat period; a peer silent for `stall_after` is
  // stalled.
  PeerLiveness(int rank, int size, std::string label, const std::string& host, uint64_t token,
               std::chrono::milliseconds interval, std::chrono::milliseconds stall_after);
  // Says goodbye to every peer (kLeft, or kLeftAfterFailure after
  // mark_failed()) and stops the thread.
  ~PeerLiveness();
  PeerLiveness(const PeerLiveness&) = delete;
  PeerLiveness& operator=(const PeerLiveness&) = delete;

  // host:port, to publish to the peers.
  std::string address() const { return address_; }
  // Connects to every other rank's address (by rank) and waits until every
  // peer has connected back, until `deadline`; throws ctp::Error naming the
  // ranks that did not.
  void connect(const std::vector<std::string>& addresses, net::Deadline deadline);
  // This rank's goodbye will say that it stops after a failure.
  void mark_failed();

  // Every other rank's state now.
  std::vector<Peer> peers() const;
  // Waits until some peer has died or left, at most `limit`.
  void wait_for_departure(std::chrono::milliseconds limit) const;

 private:
  struct Incoming;
  void watch();
  void accept_one();
  void read_from(Incoming& in);
  void beat(char what);

  const int rank_, size_;
  const std::string label_;
  const uint64_t token_;
  const std::chrono::milliseconds interval_, stall_after_;
  net::Socket listener_;
  std::string address_;
  int wake_[2] = {-1, -1};
  std::vector<net::Socket> outgoing_;  // by rank; invalid for this rank

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  std::vector<Peer> peers_;                    // by rank
  std::vector<net::Clock::time_point> heard_;  // by rank: last heartbeat
  std::vector<bool> connected_;                // by rank: its connection to us arrived
  std::vector<std::unique_ptr<Incoming>> incoming_;
  bool failed_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ctp
