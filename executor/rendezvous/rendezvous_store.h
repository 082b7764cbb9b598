// A small TCP key-value store for rendezvous, hosted by rank 0 of a
// communicator (the Gloo backend's unique id holds its address and token),
// and by the launcher's node 0 in multi-node jobs.
//
// The store doubles as a liveness monitor: every client says hello with its
// rank, and a client whose connection closes without a goodbye (its process
// died) is recorded as lost, so a survivor whose collective failed can name
// the peer that died instead of reporting a bare I/O error.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "executor/rendezvous/rendezvous_socket.h"

namespace ctp {

// Where a store is and the token that admits its clients (a random number
// that keeps workers of another job on a reused port out).
struct StoreAddress {
  net::Endpoint endpoint;
  uint64_t token = 0;

  // The bytes a unique id carries; from_bytes throws ctp::Error on bytes
  // that are not such an address.
  std::string to_bytes() const;
  static StoreAddress from_bytes(const std::string& bytes);
};

// A random 64-bit token.
uint64_t random_token();

// A client that said hello and then disappeared without a goodbye.
struct LostPeer {
  int rank = -1;
  std::string label;  // its endpoint or host/pid
  bool operator==(const LostPeer&) const = default;
};

class StoreServer {
 public:
  // Listens on `host`'s address at `port` (0: a free port); clients reach
  // it at host:port() only.
  StoreServer(const std::string& host, int port, uint64_t token);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  int port() const { return port_; }
  uint64_t token() const { return token_; }
  std::vector<LostPeer> lost_peers() const;
  // Clients that said goodbye (closed their communicator), in order.
  std::vector<LostPeer> departed_peers() const;

 private:
  struct Connection {
    net::Socket socket;
    std::thread thread;
    bool finished = false;
  };
  void accept_loop();
  void serve(Connection* conn);
  void start_watching(Connection* conn);
  std::string handle(const std::string& request, int* rank, std::string* label, bool* said_bye);

  uint64_t token_;
  net::Socket listener_;
  int port_ = 0;
  int wake_pipe_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;

  mutable std::mutex mu_;
  std::map<std::string, std::string> data_;
  std::vector<LostPeer> lost_;
  std::vector<LostPeer> departed_;
  std::list<Connection> connections_;
  std::vector<Connection*> watchers_;  // told of every loss as it happens
};

class StoreClient {
 public:
  // Connects (retrying while the server is not up, until the timeout) and
  // says hello as `rank` (-1: an observer, not watched for liveness).
  StoreClient(const StoreAddress& address, int rank, std::string label,
              std::chrono::milliseconds timeout);
  ~StoreClient();  // says goodbye
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  void set(const std::string& key, const std::string& value);
  std::optional<std::string> try_get(const std::string& key);
  // Waits until the key is set; throws ctp::Error naming the key on timeout.
  std::string get(const std::string& key);
  std::string get(const std::string& key, std::chrono::milliseconds timeout);
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  // Peers the server saw die; throws net::NetError when the server itself is
  // unreachable (its host died).
  std::vector<LostPeer> lost_peers();
  // Peers that closed their communicator normally (a peer that finished
  // while this one still runs collectives ran a shorter schedule).
  std::vector<LostPeer> departed_peers();
  // Says goodbye (idempotent): the server stops watching this rank.
  void close();

  // Subscribes to losses: the server pushes each one as it records it, on a
  // second connection. So a survivor learns which peer died even when the
  // store's host (rank 0) exits right after, before this rank asks.
  void watch_losses();
  // The losses pushed so far. When the store is gone, first waits (up to
  // `settle`) for the watch connection to drain, so nothing sent before the
  // store closed is missed.
  std::vector<LostPeer> seen_losses(std::chrono::milliseconds settle);

  // This worker's address as seen on its connection to the store: the
  // interface its peers can reach it through.
  std::string local_host();
  const StoreAddress& address() const { return address_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  std::string call(const std::string& request);
  std::vector<LostPeer> peers(char command);

  StoreAddress address_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  net::Socket socket_;

  net::Socket watch_socket_;
  std::thread watch_thread_;
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  std::vector<LostPeer> seen_;
  bool watch_ended_ = false;
};

}  // namespace ctp
