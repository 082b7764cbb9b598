// A ring on NCCL: one communicator per ring id and GPU, bound to that GPU's
// DeviceContext. Collectives are queued on a stream (the ring's
// communication stream, or the compute stream for use_calc_stream) and the
// host never waits for them, except in wait()/synchronize_device().
//
// A ring is made in two stages from two unique ids. First a non-blocking
// communicator (the probe): its creation cannot hang, it polls NCCL and ends
// after CommOptions::timeout by aborting (ncclCommAbort) with a ctp::Error
// naming the rank, the ring and the operation. Once the probe is up, every
// rank has joined, and a blocking communicator made from the second id
// carries the collectives: NCCL launches them inline (7-14 us per small
// all-reduce), where a non-blocking communicator launches each from a thread
// it starts for the call (55-80 us, bench/RESULTS.md). No wait hangs on
// either: every host wait polls NCCL's asynchronous error state and aborts
// the communicator after the timeout. c_gen_nccl_id makes both ids
// (make_nccl_ring_ids); a setup with one id gets the non-blocking ring only.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "executor/runtime/communicator.h"
#include "executor/cuda/device_context.h"

struct ncclComm;

namespace ctp {

// The bytes of a fresh ncclUniqueId (ncclGetUniqueId).
std::string make_nccl_unique_id();

struct NcclRingSetup {
  std::string unique_id;  // the bytes of make_nccl_unique_id()
  int rank = 0;
  int size = 1;
  int ring_id = 0;
  // Optional: a second id (every rank passes the same) for the blocking ring
  // that carries the collectives once the first, non-blocking one is up.
  std::string blocking_unique_id;
  DeviceContext* device = nullptr;  // must outlive the communicator
  CommOptions options;
};

// What c_gen_nccl_id hands to every rank of a ring: two fresh ids, the
// probe's and the blocking ring's, back to back.
std::string make_nccl_ring_ids();
// Sets setup.unique_id and setup.blocking_unique_id from such bytes; a single
// id (the size of one ncclUniqueId) sets unique_id only. Throws ctp::Error,
// prefixed `where`, for any other size.
void set_ring_ids(NcclRingSetup& setup, const std::string& bytes, const SourceLocation& at);

class NcclCommunicator final : public Communicator {
 public:
  // Joins the ring (ncclCommInitRankConfig); every rank calls this with the
  // same unique id. Throws ctp::Error on a bad id, an NCCL error, or when the
  // other ranks do not join within the timeout.
  static std::unique_ptr<NcclCommunicator> connect(const NcclRingSetup& setup);
  // Several rings of one process at once, one GPU each (ncclCommInitAll's
  // grouped equivalent): `devices[i]` becomes rank i of the ring. Two
  // stages as connect's: non-blocking probes (timeout, abort), then
  // blocking communicators that carry the collectives.
  static std::vector<std::unique_ptr<NcclCommunicator>> connect_all(
      const std::vector<DeviceContext*>& devices, int ring_id, const CommOptions& options);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int ring_id() const override { return ring_id_; }
  std::string backend() const override { return "nccl"; }
  // Whether collectives run on a blocking communicator (inline launches).
  bool blocking() const { return blocking_; }
  DeviceContext& device_context() const { return *device_; }

  // The Communicator interface: queued on the ring's stream after the work
  // already queued on the compute stream, and the compute stream waits for
  // the result, so later kernels see it (stream order, no host wait). Host
  // tensors are staged through the GPU and the call returns with the result
  // in them (a host wait that polls NCCL, with the timeout).
  void all_reduce(Tensor& tensor, ReduceOp op) override;
  void all_reduce_many(const std::vector<Tensor*>& tensors, ReduceOp op) override;
  void broadcast(Tensor& tensor, int root) override;
  void all_gather(const Tensor& in, Tensor& out) override;
  // Host-blocking: returns once every rank has reached it.
  void barrier() override;
  void abort(const std::string& reason) override;

  // The Communicator interface's stream-ordered forms (the CUDA kernels'):
  // the CUDA stream forms below, with `stream` a CudaStream.
  void queue_all_reduce(const Tensor& in, Tensor& out, ReduceOp op, DeviceStream stream) override;
  void queue_all_reduce_many(const std::vector<Tensor*>& tensors, ReduceOp op,
                             DeviceStream stream) override;
  void queue_broadcast(const Tensor& in, Tensor& out, int root, DeviceStream stream) override;
  void queue_all_gather(const Tensor& in, Tensor& out, DeviceStream stream) override;

  // Queued on `stream`, nothing else ordered. Out may be In (in place).
  // Tensors must be on this communicator's GPU.
  void all_reduce(const Tensor& in, Tensor& out, ReduceOp op, CudaStream stream);
  // One fused call when the tensors lie back to back in one buffer
  // (coalesce_tensor's views); else one NCCL group of calls, still no copies.
  void all_reduce_many(const std::vector<Tensor*>& tensors, ReduceOp op, CudaStream stream);
  void broadcast(const Tensor& in, Tensor& out, int root, CudaStream stream);
  void all_gather(const Tensor& in, Tensor& out, CudaStream stream);

  // Blocks the host until `stream` is idle, polling for asynchronous NCCL
  // errors; aborts and throws on one, or after the timeout.
  void wait(CudaStream stream, std::string_view what);
  // Throws if NCCL has reported an asynchronous error (non-blocking check).
  void check_async_error(std::string_view what);
  bool aborted() const { return aborted_.load(); }

 private:
  NcclCommunicator(ncclComm* comm, int rank, int size, int ring_id, DeviceContext* device,
                   CommOptions options, bool blocking);
  // Waits out ncclInProgress after a call on a non-blocking communicator.
  void finish_call(int result, std::string_view what);
  void check_tensor(const Tensor& t, std::string_view what) const;
  bool on_host(const Tensor& t) const;
  void copy_back(const Tensor& staged, Tensor& host, CudaStream stream, std::string_view what);
  // Runs collective(stream) on the ring's stream behind the compute stream's
  // queued work, and queues the compute stream behind it.
  template <typename Collective>
  void ordered_on_ring(Collective&& collective);
  // The same for a collective that works in place on `tensor`
  // (collective(tensor, stream)); a tensor in host memory is staged through
  // the GPU and copied back once the ring is done.
  template <typename Collective>
  void in_place(Tensor& tensor, std::string_view what, Collective&& collective);
  void ensure_usable(std::string_view what) const;

  ncclComm* comm_;
  int rank_, size_, ring_id_;
  DeviceContext* device_;
  int device_index_;
  CommOptions options_;
  bool blocking_;
  // Serializes NCCL calls on comm_ between the owner thread and abort(),
  // which another thread calls when a peer thread has failed.
  std::mutex call_mu_;
  std::atomic<bool> aborted_{false};
  std::string abort_reason_;
};

// One thread driving the ranks of several GPUs (connect_all's rings) must
// issue each collective's per-rank calls as one NCCL group, or the first
// call may wait for ranks not yet launched. The group opens here and closes
// at end() (throws on an NCCL error) or, failing that, at destruction.
class NcclGroup {
 public:
  NcclGroup();
  ~NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
  void end();

 private:
  bool open_ = true;
};

// The NCCL communicator of the op's ring, or a ctp::Error when that ring is
// not an NCCL ring (for instance a CPU ring in a GPU run).
NcclCommunicator& as_nccl(Communicator& comm);

// Blocks until every stream of `device` is idle, polling every NCCL ring of
// `comms` (may be null) for asynchronous errors, within comms' timeout.
void synchronize_device(DeviceContext& device, CommunicatorManager* comms);

}  // namespace ctp
