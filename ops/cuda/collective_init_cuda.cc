// CUDA kernels of the ops that set rings up: c_gen_nccl_id makes a ring's
// two NCCL unique ids (the non-blocking probe's and the blocking ring's, see
// executor/cuda/nccl_communicator.h) and exchanges them over TCP exactly as
// the CPU kernel exchanges its store address (executor/rendezvous/rendezvous.h),
// c_comm_init and c_comm_init_multitrainer join an NCCL ring
// (ncclCommInitRank), c_comm_init_all builds one among the device threads of
// this process.
#include <cstring>

#include "executor/cuda/nccl_communicator.h"
#include "executor/rendezvous/rendezvous.h"
#include "executor/threads/thread_group.h"
#include "ops/cpu/collective_common.h"
#include "ops/cuda/cuda_kernel_util.h"

namespace ctp {
namespace {

using collective::comms;
using collective::int_attr;

void c_gen_nccl_id(KernelContext& ctx) {
  CommunicatorManager& m = comms(ctx);
  int64_t rank = int_attr(ctx, "rank", 0);
  std::string endpoint_text = collective::string_attr(ctx, "endpoint");
  std::string where = ctx.where() + "rank " + std::to_string(rank) + " at " + endpoint_text + ": ";
  net::Endpoint self = net::parse_endpoint(endpoint_text, where + "attribute 'endpoint'");
  std::vector<net::Endpoint> others;
  for (const std::string& e : collective::strings_attr(ctx, "other_endpoints", true))
    others.push_back(net::parse_endpoint(e, where + "attribute 'other_endpoints'"));
  m.set_endpoint(endpoint_text);
  const IdExchangeOptions exchange{m.options().timeout, m.options().retry_interval};

  std::string id;
  if (m.local_rank() == 0) {
    try {
      if (rank == 0) {
        id = make_nccl_ring_ids();
        send_unique_id(others, id, exchange);
      } else {
        id = receive_unique_id(self, exchange);
      }
    } catch (const Error& e) {
      if (m.thread_group()) m.thread_group()->abort(e.what());
      throw Error(where + e.what());
    }
  }
  if (ThreadGroup* group = m.thread_group())
    id = group->share_from_leader(m.local_rank(), id, where + "sharing the unique id");
  // The id is host data (a RAW var): it stays in host memory.
  Tensor& out = ctx.output("Out");
  out.resize(DataType::UINT8, {static_cast<int64_t>(id.size())});
  std::memcpy(out.raw_data(), id.data(), id.size());
}

std::string id_bytes(KernelContext& ctx) {
  const Tensor& t = ctx.input("X");
  if (t.dtype() != DataType::UINT8 || t.device().kind != DeviceKind::CPU)
    throw Error(ctx.where() + "input X='" + ctx.input_names("X")[0] +
                "' is not a unique id made by c_gen_nccl_id");
  return std::string(static_cast<const char*>(t.raw_data()), t.bytes());
}

void join_ring(KernelContext& ctx, int rank, int nranks, int ring_id) {
  CommunicatorManager& m = comms(ctx);
  NcclRingSetup setup;
  set_ring_ids(setup, id_bytes(ctx), ctx.where());
  setup.rank = rank;
  setup.size = nranks;
  setup.ring_id = ring_id;
  setup.device = &cuda::device_context(ctx);
  setup.options = m.options();
  try {
    m.install(ring_id, NcclCommunicator::connect(setup));
  } catch (const Error& e) {
    if (m.thread_group()) m.thread_group()->abort(e.what());
    throw Error(ctx.where() + e.what());
  }
  setup.device->comm_stream(ring_id);  // exists before c_sync_calc_stream needs it
}

void c_comm_init(KernelContext& ctx) {
  CommunicatorManager& m = comms(ctx);
  if (m.local_size() > 1)
    throw Error(ctx.where() + "this process drives " + std::to_string(m.local_size()) +
                " device threads: their rings come from c_comm_init_multitrainer or "
                "c_comm_init_all, not c_comm_init");
  join_ring(ctx, static_cast<int>(int_attr(ctx, "rank")), static_cast<int>(int_attr(ctx, "nranks")),
            static_cast<int>(int_attr(ctx, "ring_id", 0)));
}

void c_comm_init_multitrainer(KernelContext& ctx) {
  CommunicatorManager& m = comms(ctx);
  int ntrainers = static_cast<int>(int_attr(ctx, "ntrainers"));
  int trainer_id = static_cast<int>(int_attr(ctx, "trainer_id"));
  if (ntrainers < 1 || trainer_id < 0 || trainer_id >= ntrainers)
    throw Error(ctx.where() + "trainer_id " + std::to_string(trainer_id) +
                " must be in [0, ntrainers=" + std::to_string(ntrainers) + ")");
  int local = m.local_size();
  join_ring(ctx, trainer_id * local + m.local_rank(), ntrainers * local,
            static_cast<int>(int_attr(ctx, "ring_id", 0)));
}

// c_comm_init_all (Paddle 3: comm_init_all): one NCCL ring over the GPUs of
// this process, one device
// thread each. Local rank 0 makes the id and hands it to the other threads;
// each thread then joins (the threads' ncclCommInitRank calls run
// concurrently, which NCCL requires of a ring spread over threads).
void c_comm_init_all(KernelContext& ctx) {
  CommunicatorManager& m = comms(ctx);
  int ring_id = static_cast<int>(int_attr(ctx, "ring_id", 0));
  std::vector<int64_t> devices = collective::ints_attr(ctx, "devices");
  if (!devices.empty() && static_cast<int>(devices.size()) != m.local_size())
    throw Error(ctx.where() + "attribute 'devices' lists " + std::to_string(devices.size()) +
                " device(s) but this process runs " + std::to_string(m.local_size()) +
                " device thread(s) (run the program on one thread per GPU)");
  DeviceContext& dc = cuda::device_context(ctx);
  std::string id;
  try {
    if (m.local_rank() == 0) id = make_nccl_ring_ids();
    if (ThreadGroup* group = m.thread_group())
      id = group->share_from_leader(m.local_rank(), id, ctx.where() + "sharing the unique id");
  } catch (const Error& e) {
    if (m.thread_group()) m.thread_group()->abort(e.what());
    throw Error(ctx.where() + e.what());
  }
  NcclRingSetup setup;
  set_ring_ids(setup, id, ctx.where());
  setup.rank = m.local_rank();
  setup.size = m.local_size();
  setup.ring_id = ring_id;
  setup.device = &dc;
  setup.options = m.options();
  try {
    m.install(ring_id, NcclCommunicator::connect(setup));
  } catch (const Error& e) {
    if (m.thread_group()) m.thread_group()->abort(e.what());
    throw Error(ctx.where() + e.what());
  }
  dc.comm_stream(ring_id);
}

}  // namespace

CTP_REGISTER_KERNEL(c_gen_nccl_id, CUDA, c_gen_nccl_id);
CTP_REGISTER_KERNEL(c_comm_init, CUDA, c_comm_init);
CTP_REGISTER_KERNEL(c_comm_init_multitrainer, CUDA, c_comm_init_multitrainer);
CTP_REGISTER_KERNEL(c_comm_init_all, CUDA, c_comm_init_all);
CTP_REGISTER_KERNEL(comm_init_all, CUDA, c_comm_init_all);  // Paddle 3's name

}  // namespace ctp
