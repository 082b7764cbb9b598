// Communicators: one per ring id, behind one interface, with several
// backends (Gloo on CPU, NCCL on GPU, in-process threads for the
// single-process multi-device modes). A communicator owns its streams and a
// timeout; every error it raises names the rank, the ring id and the op.
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "executor/runtime/local_group.h"
#include "executor/runtime/tensor.h"

namespace ctp {

enum class ReduceOp { Sum, Max, Min, Prod };
std::string_view to_string(ReduceOp op);

// How long a worker waits for its peers, at every step: the unique-id
// exchange, connecting a ring, and each collective. A peer that dies or
// never comes up therefore ends the run with an error, never a hang.
struct CommOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  // Pause between rank 0's attempts to reach a peer that is not up yet.
  std::chrono::milliseconds retry_interval{50};
  // The job this process belongs to (CTP_JOB_ID from ctp launch; empty when
  // unknown): rendezvous only with ranks of the same job.
  std::string job_id;
  // This process's rank and the job's number of processes, when the caller
  // knows them (-1: unknown). The ring set-up ops refuse a program
  // transpiled for another rank or another number of ranks before they talk
  // to anyone (ops/common/collective_init.h).
  int rank = -1;
  int world_size = -1;
};

// A device's queue of work (CUDA: a cudaStream_t), opaque to the runtime.
struct DeviceStream {
  void* handle = nullptr;
};

// Raised by an operation that ended because its communicator (or thread
// group) was aborted after some other failure; that other failure is the
// root cause to report.
class CommAbortedError : public Error {
 public:
  using Error::Error;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int ring_id() const = 0;
  virtual std::string backend() const = 0;  // "gloo", "nccl", "threads"

  // In place on `tensor` (every rank passes the same dtype and shape).
  virtual void all_reduce(Tensor& tensor, ReduceOp op) = 0;
  // Several tensors of one dtype reduced as one fused call (c_allreduce_xsum
  // and fused gradients). The default packs them into one buffer unless they
  // already lie back to back in one (coalesce_tensor's views).
  virtual void all_reduce_many(const std::vector<Tensor*>& tensors, ReduceOp op);
  virtual void broadcast(Tensor& tensor, int root) = 0;
  // `out` has `size()` times the elements of `in`, rank-major along dim 0.
  virtual void all_gather(const Tensor& in, Tensor& out) = 0;
  virtual void barrier() = 0;
  // Ends pending and future operations with an error (used on timeouts and
  // when a peer is known dead) instead of hanging.
  virtual void abort(const std::string& reason) = 0;

  // Stream-ordered forms, for the kernels of devices with streams: the
  // collective is queued on `stream` of the ring's device and the call
  // returns at once; `out` may be `in` (in place). A backend without streams
  // (the CPU ones) keeps the defaults, which throw a ctp::Error naming the
  // ring and its backend: its rings serve CPU kernels only.
  virtual void queue_all_reduce(const Tensor& in, Tensor& out, ReduceOp op, DeviceStream stream);
  // Several tensors of one dtype in one call, each reduced in place.
  virtual void queue_all_reduce_many(const std::vector<Tensor*>& tensors, ReduceOp op,
                                     DeviceStream stream);
  virtual void queue_broadcast(const Tensor& in, Tensor& out, int root, DeviceStream stream);
  virtual void queue_all_gather(const Tensor& in, Tensor& out, DeviceStream stream);

  // The place of a collective call, which its errors carry: "rank 1 of 4,
  // ring 0 (gloo): all_reduce(sum) FP32[1024]".
  SourceLocation place(std::string_view op, const Tensor* tensor = nullptr) const;
  // all_gather's one rule on its output, for every backend: `out` holds
  // size() x `in`'s elements of `in`'s dtype.
  void check_all_gather_output(const Tensor& in, const Tensor& out) const;

 private:
  Error no_device_streams(std::string_view op) const;
};

// The communication state of one worker (or of one device thread when one
// process drives several devices): its options, its identity among the
// threads of its process, the communicators by ring id, and what must live
// as long as they do (rank 0's rendezvous stores).
class CommunicatorManager {
 public:
  CommunicatorManager() = default;
  explicit CommunicatorManager(CommOptions options) : options_(options) {}
  ~CommunicatorManager();
  CommunicatorManager(const CommunicatorManager&) = delete;
  CommunicatorManager& operator=(const CommunicatorManager&) = delete;

  const CommOptions& options() const { return options_; }
  void set_options(const CommOptions& options) { options_ = options; }

  // Replaces any communicator already installed for that ring.
  void install(int ring_id, std::unique_ptr<Communicator> comm);
  // Throws ctp::Error "ring N is not initialized (run c_comm_init first)".
  Communicator& get(int ring_id);
  bool has(int ring_id) const;
  std::vector<int> ring_ids() const;
  void abort_all(const std::string& reason);

  // This manager's device thread among the threads of its process (none:
  // the worker drives one device, local_size() is 1).
  void join_thread_group(std::shared_ptr<LocalGroup> group, int local_rank);
  LocalGroup* thread_group() const { return group_.get(); }
  // Aborts the thread group, if any, so that the other threads stop waiting
  // for this one (which failed with `reason`).
  void abort_thread_group(const std::string& reason);
  int local_rank() const { return local_rank_; }
  int local_size() const;

  // This worker's own endpoint, once c_gen_nccl_id has named it; used to
  // label the worker in its peers' error messages and to choose the local
  // address the Gloo transport binds to.
  void set_endpoint(std::string endpoint) { endpoint_ = std::move(endpoint); }
  const std::string& endpoint() const { return endpoint_; }

  // Keeps `resource` alive as long as this manager (rank 0's store server).
  void keep_alive(std::shared_ptr<void> resource);

 private:
  CommOptions options_;
  mutable std::mutex mu_;
  std::map<int, std::unique_ptr<Communicator>> rings_;
  std::shared_ptr<LocalGroup> group_;
  int local_rank_ = 0;
  std::string endpoint_;
  std::vector<std::shared_ptr<void>> kept_;
};

}  // namespace ctp
