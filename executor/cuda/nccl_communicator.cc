#include "executor/cuda/nccl_communicator.h"

#include <nccl.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "executor/cuda/cuda_check.h"

namespace ctp {
namespace {

using Clock = std::chrono::steady_clock;

std::string nccl_message(ncclResult_t result, ncclComm_t comm) {
  std::string out = std::string(ncclGetErrorString(result));
  const char* last = ncclGetLastError(comm);
  if (last && *last) out += " (" + std::string(last) + ")";
  return out;
}

ncclDataType_t nccl_type(DataType dtype, const SourceLocation& at) {
  switch (dtype) {
    case DataType::FP32: return ncclFloat32;
    case DataType::FP64: return ncclFloat64;
    case DataType::FP16: return ncclFloat16;
    case DataType::BF16: return ncclBfloat16;
    case DataType::INT32: return ncclInt32;
    case DataType::INT64: return ncclInt64;
    case DataType::UINT8: return ncclUint8;
    case DataType::INT8: return ncclInt8;
    case DataType::BOOL: return ncclUint8;
    default:
      throw Error(at, "NCCL cannot carry dtype " + std::string(to_string(dtype)));
  }
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Min: return ncclMin;
    case ReduceOp::Prod: return ncclProd;
  }
  return ncclSum;
}

ncclUniqueId unique_id_from(const std::string& bytes, const SourceLocation& at) {
  ncclUniqueId id;
  if (bytes.size() != sizeof(id.internal))
    throw Error(at, "the unique id has " + std::to_string(bytes.size()) +
                " bytes, an NCCL id has " + std::to_string(sizeof(id.internal)) +
                " (was it made by a CPU run's c_gen_nccl_id?)");
  std::memcpy(id.internal, bytes.data(), bytes.size());
  return id;
}

ncclConfig_t nonblocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// Polls a non-blocking communicator until its pending call completes.
// Returns the final state; ncclInProgress means the deadline passed.
// `mu` (null before the communicator is shared) serializes it with abort().
ncclResult_t poll_until_done(ncclComm_t comm, std::mutex* mu, Clock::time_point deadline) {
  for (int spins = 0;; ++spins) {
    ncclResult_t state = ncclSuccess;
    {
      std::unique_lock<std::mutex> lock;
      if (mu) lock = std::unique_lock<std::mutex>(*mu);
      ncclResult_t r = ncclCommGetAsyncError(comm, &state);
      if (r != ncclSuccess) return r;
    }
    if (state != ncclInProgress) return state;
    if (Clock::now() > deadline) return ncclInProgress;
    if (spins < 1000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

std::string seconds(std::chrono::milliseconds ms) {
  return std::to_string(static_cast<double>(ms.count()) / 1000.0) + " s";
}

// The blocking communicator of `setup.blocking_unique_id`, made once the
// non-blocking `probe` has shown that every rank is up (so this blocking
// init does not wait on a missing peer); the probe is then released.
ncclComm_t blocking_successor(ncclComm_t probe, const NcclRingSetup& setup,
                              const SourceLocation& at) {
  ncclUniqueId id = unique_id_from(setup.blocking_unique_id, at);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, setup.size, id, setup.rank, &config);
  if (r != ncclSuccess) {
    std::string message = nccl_message(r, comm);
    if (comm) ncclCommAbort(comm);
    ncclCommAbort(probe);
    throw Error(at, "blocking ncclCommInitRankConfig failed: " + message);
  }
  ncclCommDestroy(probe);
  return comm;
}

}  // namespace

std::string make_nccl_unique_id() {
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess)
    throw Error(std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(r));
  return std::string(id.internal, sizeof(id.internal));
}

std::string make_nccl_ring_ids() { return make_nccl_unique_id() + make_nccl_unique_id(); }

void set_ring_ids(NcclRingSetup& setup, const std::string& bytes, const SourceLocation& at) {
  constexpr std::size_t one = sizeof(ncclUniqueId::internal);
  if (bytes.size() == 2 * one) {
    setup.unique_id = bytes.substr(0, one);
    setup.blocking_unique_id = bytes.substr(one);
  } else if (bytes.size() == one) {
    setup.unique_id = bytes;
    setup.blocking_unique_id.clear();
  } else {
    throw Error(at, "the unique id has " + std::to_string(bytes.size()) +
                " bytes; c_gen_nccl_id makes " + std::to_string(2 * one) + " (two NCCL ids of " +
                std::to_string(one) + ") (was it made by a CPU run's c_gen_nccl_id?)");
  }
}

NcclCommunicator::NcclCommunicator(ncclComm* comm, int rank, int size, int ring_id,
                                   DeviceContext* device, CommOptions options, bool blocking)
    : comm_(comm), rank_(rank), size_(size), ring_id_(ring_id), device_(device),
      device_index_(device->index()), options_(options), blocking_(blocking) {}

std::unique_ptr<NcclCommunicator> NcclCommunicator::connect(const NcclRingSetup& setup) {
  const SourceLocation at{.rank = setup.rank, .nranks = setup.size, .ring = setup.ring_id,
                          .backend = "nccl", .collective = "init"};
  if (!setup.device) throw Error(at, "no DeviceContext (a GPU run needs one per device)");
  if (setup.size < 1 || setup.rank < 0 || setup.rank >= setup.size)
    throw Error(at, "the rank must be in [0, nranks)");
  ncclUniqueId id = unique_id_from(setup.unique_id, at);
  cuda::DeviceGuard guard(setup.device->index());
  ncclConfig_t config = nonblocking_config();
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, setup.size, id, setup.rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    std::string message = nccl_message(r, comm);
    if (comm) ncclCommAbort(comm);
    throw Error(at, "ncclCommInitRankConfig on " + setup.device->device().to_string() +
                " failed: " + message);
  }
  ncclResult_t state = poll_until_done(comm, nullptr, Clock::now() + setup.options.timeout);
  if (state != ncclSuccess) {
    std::string message = state == ncclInProgress
                              ? "the other ranks did not join within " +
                                    seconds(setup.options.timeout) + " (communicator aborted)"
                              : nccl_message(state, comm);
    ncclCommAbort(comm);
    throw Error(at, message);
  }
  const bool blocking = !setup.blocking_unique_id.empty();
  if (blocking) comm = blocking_successor(comm, setup, at);
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(
      comm, setup.rank, setup.size, setup.ring_id, setup.device, setup.options, blocking));
}

std::vector<std::unique_ptr<NcclCommunicator>> NcclCommunicator::connect_all(
    const std::vector<DeviceContext*>& devices, int ring_id, const CommOptions& options) {
  const int n = static_cast<int>(devices.size());
  // The ring of this process's GPUs, one rank each.
  const SourceLocation at{.nranks = n, .ring = ring_id, .backend = "nccl", .collective = "init"};
  ncclUniqueId id = unique_id_from(make_nccl_unique_id(), at);
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  ncclConfig_t config = nonblocking_config();
  ncclResult_t r = ncclGroupStart();
  for (int i = 0; i < n && r == ncclSuccess; ++i) {
    cuda::DeviceGuard guard(devices[i]->index());
    r = ncclCommInitRankConfig(&comms[i], n, id, i, &config);
    if (r == ncclInProgress) r = ncclSuccess;
  }
  ncclResult_t end = ncclGroupEnd();
  if (r == ncclSuccess) r = end;
  auto abort_all = [&] {
    for (ncclComm_t c : comms)
      if (c) ncclCommAbort(c);
  };
  if (r != ncclSuccess && r != ncclInProgress) {
    abort_all();
    throw Error(at, "ncclCommInitRankConfig failed: " + std::string(ncclGetErrorString(r)));
  }
  const auto deadline = Clock::now() + options.timeout;
  for (int i = 0; i < n; ++i) {
    ncclResult_t state = poll_until_done(comms[i], nullptr, deadline);
    if (state != ncclSuccess) {
      std::string message = state == ncclInProgress ? "timed out after " + seconds(options.timeout)
                                                    : nccl_message(state, comms[i]);
      abort_all();
      throw Error(at, "rank " + std::to_string(i) + " on " +
                  devices[i]->device().to_string() + ": " + message);
    }
  }
  // As connect's second stage: the probes above show every GPU can join, so
  // grouped blocking inits from a second id cannot wait on a missing rank;
  // those carry the collectives (inline launches), the probes are released.
  ncclUniqueId second = unique_id_from(make_nccl_unique_id(), at);
  std::vector<ncclComm_t> carriers(devices.size(), nullptr);
  ncclConfig_t blocking = NCCL_CONFIG_INITIALIZER;
  blocking.blocking = 1;
  r = ncclGroupStart();
  for (int i = 0; i < n && r == ncclSuccess; ++i) {
    cuda::DeviceGuard guard(devices[i]->index());
    r = ncclCommInitRankConfig(&carriers[i], n, second, i, &blocking);
  }
  end = ncclGroupEnd();
  if (r == ncclSuccess) r = end;
  if (r != ncclSuccess) {
    for (ncclComm_t c : carriers)
      if (c) ncclCommAbort(c);
    abort_all();
    throw Error(at, "blocking ncclCommInitRankConfig failed: " + std::string(ncclGetErrorString(r)));
  }
  for (int i = 0; i < n; ++i) {
    cuda::DeviceGuard guard(devices[i]->index());
    ncclCommDestroy(comms[i]);
  }
  std::vector<std::unique_ptr<NcclCommunicator>> out;
  for (int i = 0; i < n; ++i)
    out.push_back(std::unique_ptr<NcclCommunicator>(
        new NcclCommunicator(carriers[i], i, n, ring_id, devices[i], options, true)));
  return out;
}

NcclCommunicator::~NcclCommunicator() {
  if (!comm_) return;
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(device_index_);
  if (aborted_.load()) {
    // ncclCommAbort already released it.
  } else {
    // Let queued collectives finish (bounded) before the resources go.
    // Let a pending call finish (bounded) before the resources go.
    const auto deadline = Clock::now() + options_.timeout;
    if (poll_until_done(comm_, &call_mu_, deadline) == ncclSuccess)
      ncclCommDestroy(comm_);
    else
      ncclCommAbort(comm_);
  }
  cudaSetDevice(previous);
}

void NcclCommunicator::ensure_usable(std::string_view what) const {
  if (aborted_.load())
    throw CommAbortedError(place(what), "the communicator was aborted: " + abort_reason_);
}

void NcclCommunicator::check_tensor(const Tensor& t, std::string_view what) const {
  if (!t.initialized()) throw Error(place(what), "the tensor is not initialized");
  const Device d = t.device();
  if (d.kind != DeviceKind::CUDA || d.index != device_index_)
    throw Error(place(what, &t), "the tensor is on " + d.to_string() + ", but this ring runs on " +
                device_->device().to_string());
}

void NcclCommunicator::finish_call(int result_code, std::string_view what) {
  auto result = static_cast<ncclResult_t>(result_code);
  if (result == ncclInProgress)
    result = poll_until_done(comm_, &call_mu_, Clock::now() + options_.timeout);
  if (result == ncclSuccess) return;
  std::string message = result == ncclInProgress
                            ? "timed out after " + seconds(options_.timeout) +
                                  " (a peer may be dead or stuck)"
                            : nccl_message(result, comm_);
  abort(std::string(what) + ": " + message);
  throw Error(place(what), message + "; communicator aborted");
}

void NcclCommunicator::all_reduce(const Tensor& in, Tensor& out, ReduceOp op, CudaStream stream) {
  ensure_usable("all_reduce");
  check_tensor(in, "all_reduce");
  check_tensor(out, "all_reduce");
  if (in.bytes() != out.bytes() || in.dtype() != out.dtype())
    throw Error(place("all_reduce", &in), "output has a different dtype or size");
  cuda::DeviceGuard guard(device_index_);
  ncclResult_t r;
  {
    std::lock_guard<std::mutex> lock(call_mu_);
    r = ncclAllReduce(in.raw_data(), out.raw_data(), static_cast<std::size_t>(in.numel()),
                      nccl_type(in.dtype(), place("all_reduce")), nccl_op(op), comm_, stream);
  }
  finish_call(r, "all_reduce");
}

void NcclCommunicator::all_reduce_many(const std::vector<Tensor*>& tensors, ReduceOp op,
                                       CudaStream stream) {
  if (tensors.empty()) return;
  ensure_usable("all_reduce_many");
  const DataType dtype = tensors[0]->dtype();
  int64_t total = 0;
  bool contiguous = true;
  const char* expected = static_cast<const char*>(tensors[0]->raw_data());
  for (Tensor* t : tensors) {
    check_tensor(*t, "all_reduce_many");
    if (t->dtype() != dtype)
      throw Error(place("all_reduce_many"), "tensors of different dtypes (" +
                  std::string(to_string(dtype)) + " and " + std::string(to_string(t->dtype())) +
                  ") cannot be fused");
    contiguous = contiguous && static_cast<const char*>(t->raw_data()) == expected;
    expected = static_cast<const char*>(t->raw_data()) + t->bytes();
    total += t->numel();
  }
  if (contiguous) {
    Tensor whole = Tensor::view(tensors[0]->buffer(), tensors[0]->offset(), dtype, {total});
    all_reduce(whole, whole, op, stream);
    return;
  }
  cuda::DeviceGuard guard(device_index_);
  const ncclDataType_t type = nccl_type(dtype, place("all_reduce_many"));
  ncclResult_t r;
  {
    std::lock_guard<std::mutex> lock(call_mu_);
    r = ncclGroupStart();
    for (Tensor* t : tensors) {
      if (r != ncclSuccess) break;
      r = ncclAllReduce(t->raw_data(), t->raw_data(), static_cast<std::size_t>(t->numel()), type,
                        nccl_op(op), comm_, stream);
    }
    ncclResult_t end = ncclGroupEnd();
    if (r == ncclSuccess) r = end;
  }
  finish_call(r, "all_reduce_many");
}

void NcclCommunicator::broadcast(const Tensor& in, Tensor& out, int root, CudaStream stream) {
  ensure_usable("broadcast");
  check_tensor(in, "broadcast");
  check_tensor(out, "broadcast");
  if (root < 0 || root >= size_)
    throw Error(place("broadcast", &in), "root " + std::to_string(root) + " is not a rank");
  if (in.bytes() != out.bytes())
    throw Error(place("broadcast", &in), "output has a different size");
  cuda::DeviceGuard guard(device_index_);
  ncclResult_t r;
  {
    std::lock_guard<std::mutex> lock(call_mu_);
    r = ncclBroadcast(in.raw_data(), out.raw_data(), static_cast<std::size_t>(in.numel()),
                      nccl_type(in.dtype(), place("broadcast")), root, comm_, stream);
  }
  finish_call(r, "broadcast");
}

void NcclCommunicator::all_gather(const Tensor& in, Tensor& out, CudaStream stream) {
  ensure_usable("all_gather");
  check_tensor(in, "all_gather");
  check_tensor(out, "all_gather");
  check_all_gather_output(in, out);
  cuda::DeviceGuard guard(device_index_);
  ncclResult_t r;
  {
    std::lock_guard<std::mutex> lock(call_mu_);
    r = ncclAllGather(in.raw_data(), out.raw_data(), static_cast<std::size_t>(in.numel()),
                      nccl_type(in.dtype(), place("all_gather")), comm_, stream);
  }
  finish_call(r, "all_gather");
}

// The Communicator interface also takes host tensors: the executor's own
// messages (the collective-schedule check's fingerprints) and callers'
// host data travel through this GPU. They are copied in, the collective
// runs on the ring's stream, and the host waits (polling NCCL, with the
// timeout) before copying the result back: host memory must hold it on return.
bool NcclCommunicator::on_host(const Tensor& t) const {
  return t.initialized() && t.device().kind == DeviceKind::CPU;
}

void NcclCommunicator::copy_back(const Tensor& staged, Tensor& host, CudaStream stream,
                                 std::string_view what) {
  wait(stream, what);
  const Tensor result = device_->to_host(staged);
  std::memcpy(host.raw_data(), result.raw_data(), result.bytes());
}

template <typename Collective>
void NcclCommunicator::ordered_on_ring(Collective&& collective) {
  CudaStream stream = device_->comm_stream(ring_id_);
  device_->stream_wait(stream, device_->compute_stream());
  collective(stream);
  device_->stream_wait(device_->compute_stream(), stream);
}

template <typename Collective>
void NcclCommunicator::in_place(Tensor& tensor, std::string_view what, Collective&& collective) {
  if (!on_host(tensor)) {
    ordered_on_ring([&](CudaStream stream) { collective(tensor, stream); });
    return;
  }
  Tensor staged = device_->to_device(tensor);
  CudaStream stream = device_->comm_stream(ring_id_);
  device_->stream_wait(stream, device_->compute_stream());
  collective(staged, stream);
  copy_back(staged, tensor, stream, what);
}

void NcclCommunicator::all_reduce(Tensor& tensor, ReduceOp op) {
  in_place(tensor, "all_reduce",
           [&](Tensor& t, CudaStream stream) { all_reduce(t, t, op, stream); });
}

void NcclCommunicator::all_reduce_many(const std::vector<Tensor*>& tensors, ReduceOp op) {
  bool any_on_host = false;
  for (const Tensor* t : tensors) any_on_host = any_on_host || on_host(*t);
  if (any_on_host) {  // no fusion for host data: one staged call each
    for (Tensor* t : tensors) all_reduce(*t, op);
    return;
  }
  ordered_on_ring([&](CudaStream stream) { all_reduce_many(tensors, op, stream); });
}

void NcclCommunicator::broadcast(Tensor& tensor, int root) {
  in_place(tensor, "broadcast",
           [&](Tensor& t, CudaStream stream) { broadcast(t, t, root, stream); });
}

void NcclCommunicator::all_gather(const Tensor& in, Tensor& out) {
  if (on_host(in) || on_host(out)) {
    const Tensor staged_in = on_host(in) ? device_->to_device(in) : in;
    Tensor staged_out = on_host(out) ? Tensor(out.dtype(), out.shape(), device_->device()) : out;
    CudaStream stream = device_->comm_stream(ring_id_);
    device_->stream_wait(stream, device_->compute_stream());
    all_gather(staged_in, staged_out, stream);
    if (on_host(out))
      copy_back(staged_out, out, stream, "all_gather");
    else
      device_->stream_wait(device_->compute_stream(), stream);
    return;
  }
  ordered_on_ring([&](CudaStream stream) { all_gather(in, out, stream); });
}

void NcclCommunicator::barrier() {
  Tensor token(DataType::INT32, {1}, device_->device());
  CudaStream stream = device_->comm_stream(ring_id_);
  all_reduce(token, token, ReduceOp::Sum, stream);
  wait(stream, "barrier");
}

void NcclCommunicator::abort(const std::string& reason) {
  if (aborted_.exchange(true)) return;
  abort_reason_ = reason;
  std::lock_guard<std::mutex> lock(call_mu_);
  ncclCommAbort(comm_);
}

void NcclCommunicator::check_async_error(std::string_view what) {
  ensure_usable(what);
  ncclResult_t state = ncclSuccess;
  ncclResult_t r;
  {
    std::lock_guard<std::mutex> lock(call_mu_);
    r = ncclCommGetAsyncError(comm_, &state);
  }
  if (r != ncclSuccess) state = r;
  if (state == ncclSuccess || state == ncclInProgress) return;
  std::string message = nccl_message(state, comm_);
  abort(std::string(what) + ": " + message);
  throw Error(place(what), "asynchronous NCCL error: " + message + "; communicator aborted");
}

void NcclCommunicator::wait(CudaStream stream, std::string_view what) {
  cuda::DeviceGuard guard(device_index_);
  const auto deadline = Clock::now() + options_.timeout;
  for (int spins = 0;; ++spins) {
    cudaError_t q = cudaStreamQuery(stream);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) CTP_CUDA_CHECK(q);
    check_async_error(what);
    if (Clock::now() > deadline) {
      std::string message = "timed out after " + seconds(options_.timeout) +
                            " waiting for the GPU (a peer may be dead or stuck)";
      abort(std::string(what) + ": " + message);
      throw Error(place(what), message + "; communicator aborted");
    }
    if (spins < 2000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void NcclCommunicator::queue_all_reduce(const Tensor& in, Tensor& out, ReduceOp op,
                                        DeviceStream stream) {
  all_reduce(in, out, op, static_cast<CudaStream>(stream.handle));
}

void NcclCommunicator::queue_all_reduce_many(const std::vector<Tensor*>& tensors, ReduceOp op,
                                             DeviceStream stream) {
  all_reduce_many(tensors, op, static_cast<CudaStream>(stream.handle));
}

void NcclCommunicator::queue_broadcast(const Tensor& in, Tensor& out, int root,
                                       DeviceStream stream) {
  broadcast(in, out, root, static_cast<CudaStream>(stream.handle));
}

void NcclCommunicator::queue_all_gather(const Tensor& in, Tensor& out, DeviceStream stream) {
  all_gather(in, out, static_cast<CudaStream>(stream.handle));
}

NcclCommunicator& as_nccl(Communicator& comm) {
  auto* nccl = dynamic_cast<NcclCommunicator*>(&comm);
  if (!nccl)
    throw Error(comm.place("as_nccl"), "a " + comm.backend() +
                                           " ring, not an NCCL one: GPU kernels need rings made "
                                           "by the GPU kernels of c_comm_init / c_comm_init_all");
  return *nccl;
}

NcclGroup::NcclGroup() {
  const ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess) throw Error(std::string("ncclGroupStart failed: ") + ncclGetErrorString(r));
}

void NcclGroup::end() {
  if (!open_) return;
  open_ = false;
  const ncclResult_t r = ncclGroupEnd();
  if (r != ncclSuccess) throw Error(std::string("ncclGroupEnd failed: ") + ncclGetErrorString(r));
}

NcclGroup::~NcclGroup() {
  if (open_) ncclGroupEnd();
}

void synchronize_device(DeviceContext& device, CommunicatorManager* comms) {
  std::vector<NcclCommunicator*> rings;
  if (comms)
    for (int ring : comms->ring_ids())
      if (auto* nccl = dynamic_cast<NcclCommunicator*>(&comms->get(ring)))
        if (&nccl->device_context() == &device) rings.push_back(nccl);
  if (rings.empty()) {
    device.synchronize();
    return;
  }
  // Every stream of the device into one: the compute stream waits for the
  // rings, then the host waits for it while NCCL errors are polled.
  for (int ring : device.comm_rings())
    device.stream_wait(device.compute_stream(), device.comm_stream(ring));
  rings[0]->wait(device.compute_stream(), "synchronize");
  for (NcclCommunicator* ring : rings) ring->check_async_error("synchronize");
}

}  // namespace ctp
