#include "ops/common/collective_init.h"

#include <cstring>

#include "executor/runtime/comm_backend.h"
#include "ops/common/collective.h"

namespace ctp::collective {
namespace {

// The op's place with the rank it joins a ring as.
SourceLocation ring_place(const KernelContext& ctx, int64_t rank, int64_t nranks, int64_t ring) {
  SourceLocation at = ctx.location();
  at.rank = rank;
  at.nranks = nranks;
  at.ring = ring;
  return at;
}

// The backend of the run's device kind for rings of `span`; its errors (none
// registered, its library cannot be loaded) get the place `at`.
CommBackend& backend(KernelContext& ctx, RingSpan span, const SourceLocation& at) {
  try {
    return CommBackendRegistry::global().get(ctx.services().device.kind, span);
  } catch (Error& e) {
    e.locate(at);
    throw;
  }
}

// A failed ring set-up: the other device threads of this process would wait
// for this one, so the thread group is aborted before the error goes up,
// with the place `at` added to what the backend's error names already.
// Called in the handler of `e`: `throw;` keeps its type (CommAbortedError).
[[noreturn]] void fail(CommunicatorManager& m, const SourceLocation& at, Error& e) {
  m.abort_thread_group(e.what());
  e.locate(at);
  throw;
}

std::string id_bytes(KernelContext& ctx) {
  const Tensor& t = ctx.input("X");
  if (t.dtype() != DataType::UINT8 || t.device().kind != DeviceKind::CPU)
    throw ctx.error("input X='" + ctx.input_names("X")[0] +
                "' is not a unique id made by c_gen_nccl_id (dtype " +
                std::string(to_string(t.dtype())) + " on " + t.device().to_string() + ")");
  return std::string(static_cast<const char*>(t.raw_data()), t.bytes());
}

// The program's place in the job against the process's (CommOptions::rank
// and world_size, when known); `what` names the attributes.
void check_program_identity(const CommOptions& options, int program_rank, int program_ranks,
                            const std::string& what, const SourceLocation& at) {
  if (options.world_size > 0 && program_ranks != options.world_size)
    throw Error(at, "the program was transpiled for " + std::to_string(program_ranks) +
                        " rank(s) (" + what + "), but this job has " +
                        std::to_string(options.world_size) + " process(es)");
  if (options.rank >= 0 && program_rank != options.rank)
    throw Error(at, "the program was transpiled for rank " + std::to_string(program_rank) +
                        " (" + what + "), but this process is rank " +
                        std::to_string(options.rank) +
                        " (give each rank its own program, e.g. {rank} in the paths of ctp run)");
}

// Joins rank `rank` of a ring across processes from the id in input X.
void connect_ring(KernelContext& ctx, int rank, int nranks, int ring_id) {
  CommunicatorManager& m = comms(ctx);
  const SourceLocation at = ring_place(ctx, rank, nranks, ring_id);
  if (nranks < 1 || rank < 0 || rank >= nranks)
    throw Error(at, "the rank must be in [0, nranks)");
  RingSetup setup;
  setup.unique_id = id_bytes(ctx);
  setup.rank = rank;
  setup.size = nranks;
  setup.ring_id = ring_id;
  setup.comms = &m;
  setup.device_context = ctx.services().device_context;
  try {
    m.install(ring_id, backend(ctx, RingSpan::Processes, at).connect(setup));
  } catch (Error& e) {
    fail(m, at, e);
  }
}

}  // namespace

void gen_unique_id_kernel(KernelContext& ctx) {
  CommunicatorManager& m = comms(ctx);
  const int64_t rank = ctx.int_attr("rank", 0);
  const std::string endpoint = ctx.string_attr("endpoint");
  const std::vector<std::string> others =
      ctx.strings_attr("other_endpoints", std::vector<std::string>{});
  // The exchange's errors name the endpoints they are about.
  check_program_identity(m.options(), static_cast<int>(rank), static_cast<int>(others.size()) + 1,
                         "its c_gen_nccl_id", ctx.location());
  SourceLocation at = ctx.location();
  at.rank = rank;
  RingIdExchange* exchange = nullptr;
  try {
    exchange = &CommBackendRegistry::global().id_exchange();
    exchange->check_endpoints(endpoint, others);
  } catch (Error& e) {
    e.locate(at);
    throw;
  }
  m.set_endpoint(endpoint);

  std::string id;
  if (m.local_rank() == 0) {
    try {
      if (rank == 0) {
        id = backend(ctx, RingSpan::Processes, at).make_unique_id({endpoint, &m});
        exchange->send(others, id, m.options());
      } else {
        id = exchange->receive(endpoint, m.options());
      }
    } catch (Error& e) {
      fail(m, at, e);
    }
  }
  if (LocalGroup* group = m.thread_group()) {
    try {
      id = group->share_from_leader(m.local_rank(), id, "sharing the unique id");
    } catch (Error& e) {
      e.locate(at);
      throw;
    }
  }
  // The id is host data (a RAW var) on every device.
  Tensor& out = ctx.output("Out");
  out.resize(DataType::UINT8, {static_cast<int64_t>(id.size())});
  std::memcpy(out.raw_data(), id.data(), id.size());
}

void comm_init_kernel(KernelContext& ctx) {
  CommunicatorManager& m = comms(ctx);
  if (m.local_size() > 1)
    throw ctx.error("this process drives " + std::to_string(m.local_size()) +
                " device threads: their rings come from c_comm_init_multitrainer or "
                "c_comm_init_all, not c_comm_init");
  const int rank = static_cast<int>(ctx.int_attr("rank"));
  const int nranks = static_cast<int>(ctx.int_attr("nranks"));
  check_program_identity(m.options(), rank, nranks, "its c_comm_init", ctx.location());
  connect_ring(ctx, rank, nranks, static_cast<int>(ctx.int_attr("ring_id", 0)));
}

void comm_init_multitrainer_kernel(KernelContext& ctx) {
  CommunicatorManager& m = comms(ctx);
  const int ntrainers = static_cast<int>(ctx.int_attr("ntrainers"));
  const int trainer_id = static_cast<int>(ctx.int_attr("trainer_id"));
  if (ntrainers < 1 || trainer_id < 0 || trainer_id >= ntrainers)
    throw ctx.error("trainer_id " + std::to_string(trainer_id) +
                " must be in [0, ntrainers=" + std::to_string(ntrainers) + ")");
  check_program_identity(m.options(), trainer_id, ntrainers, "its c_comm_init_multitrainer",
                         ctx.location());
  const int local = m.local_size();
  connect_ring(ctx, trainer_id * local + m.local_rank(), ntrainers * local,
               static_cast<int>(ctx.int_attr("ring_id", 0)));
}

// Local rank 0 makes the ring's id and hands it to the other threads; each
// thread then joins (concurrently, which NCCL requires of a ring spread over
// threads).
void comm_init_all_kernel(KernelContext& ctx) {
  CommunicatorManager& m = comms(ctx);
  const int ring_id = static_cast<int>(ctx.int_attr("ring_id", 0));
  const std::vector<int64_t> devices = ctx.ints_attr("devices", std::vector<int64_t>{});
  if (!devices.empty() && static_cast<int>(devices.size()) != m.local_size())
    throw ctx.error("attribute 'devices' lists " + std::to_string(devices.size()) +
                " device(s) but this process runs " + std::to_string(m.local_size()) +
                " device thread(s) (run the program on one thread per device)");
  // The rank within the ring of this process's device threads.
  const SourceLocation at = ring_place(ctx, m.local_rank(), m.local_size(), ring_id);
  RingSetup setup;
  setup.rank = m.local_rank();
  setup.size = m.local_size();
  setup.ring_id = ring_id;
  setup.comms = &m;
  setup.device_context = ctx.services().device_context;
  try {
    CommBackend& b = backend(ctx, RingSpan::Threads, at);
    if (m.local_rank() == 0) setup.unique_id = b.make_unique_id({"", &m});
    if (LocalGroup* group = m.thread_group())
      setup.unique_id = group->share_from_leader(m.local_rank(), setup.unique_id,
                                                 "sharing the unique id");
    m.install(ring_id, b.connect(setup));
  } catch (Error& e) {
    fail(m, at, e);
  }
}

}  // namespace ctp::collective
