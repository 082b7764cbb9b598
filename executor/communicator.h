// Communicators: one per ring id, behind one interface, with several
// backends (Gloo on CPU, NCCL on GPU). A communicator owns its streams and a
// timeout; every error it raises names the rank, the ring id and the op.
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "executor/tensor.h"

namespace ctp {

enum class ReduceOp { Sum, Max, Min, Prod };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int ring_id() const = 0;
  virtual std::string backend() const = 0;  // "gloo", "nccl", ...

  // In place on `tensor` (every rank passes the same dtype and shape).
  virtual void all_reduce(Tensor& tensor, ReduceOp op) = 0;
  virtual void broadcast(Tensor& tensor, int root) = 0;
  // `out` has `size()` times the elements of `in`, rank-major along dim 0.
  virtual void all_gather(const Tensor& in, Tensor& out) = 0;
  virtual void barrier() = 0;
  // Ends pending and future operations with an error (used on timeouts and
  // when a peer is known dead) instead of hanging.
  virtual void abort(const std::string& reason) = 0;
};

// The communicators of one worker (or one device thread), by ring id.
class CommunicatorManager {
 public:
  // Replaces any communicator already installed for that ring.
  void install(int ring_id, std::unique_ptr<Communicator> comm);
  // Throws ctp::Error "ring N is not initialized (run c_comm_init first)".
  Communicator& get(int ring_id);
  bool has(int ring_id) const;
  void abort_all(const std::string& reason);

 private:
  mutable std::mutex mu_;
  std::map<int, std::unique_ptr<Communicator>> rings_;
};

}  // namespace ctp
