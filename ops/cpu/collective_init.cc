// CPU kernels of the ops that set communicators up: c_gen_nccl_id makes and
// exchanges a ring's unique id, c_comm_init / c_comm_init_multitrainer turn
// it into a Gloo communicator, c_comm_init_all builds an in-process one
// among the device threads of this process.
//
// On CPU the unique id is the address of a rendezvous store that rank 0
// hosts (plus a random token): Gloo's ranks find each other through it.
#include <cstring>

#include "executor/rendezvous/rendezvous.h"
#include "executor/rendezvous/rendezvous_store.h"
#include "executor/threads/thread_group.h"
#include "ops/cpu/collective_common.h"

#ifdef CTP_HAVE_GLOO
#include "executor/gloo/gloo_communicator.h"
#endif

namespace ctp {
namespace {

using collective::comms;
using collective::int_attr;

IdExchangeOptions exchange_options(const CommunicatorManager& m) {
  return IdExchangeOptions{m.options().timeout, m.options().retry_interval};
}

// c_gen_nccl_id: Out (RAW, kept as a UINT8 tensor) = the unique id.
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

  std::string id;
  // With several device threads in this process, one of them talks to the
  // other processes and hands the id to the rest.
  if (m.local_rank() == 0) {
    try {
      if (rank == 0) {
        auto store = std::make_shared<StoreServer>(self.host, 0, random_token());
        m.keep_alive(store);
        id = StoreAddress{net::Endpoint{self.host, store->port()}, store->token()}.to_bytes();
        send_unique_id(others, id, exchange_options(m));
      } else {
        id = receive_unique_id(self, exchange_options(m));
      }
    } catch (const Error& e) {
      if (m.thread_group()) m.thread_group()->abort(e.what());
      throw Error(where + e.what());
    }
  }
  if (ThreadGroup* group = m.thread_group())
    id = group->share_from_leader(m.local_rank(), id, where + "sharing the unique id");

  Tensor& out = ctx.output("Out");
  out.resize(DataType::UINT8, {static_cast<int64_t>(id.size())});
  std::memcpy(out.raw_data(), id.data(), id.size());
}

std::string id_bytes(KernelContext& ctx) {
  const Tensor& t = ctx.input("X");
  if (t.dtype() != DataType::UINT8)
    throw Error(ctx.where() + "input X='" + ctx.input_names("X")[0] +
                "' is not a unique id made by c_gen_nccl_id (dtype " +
                std::string(to_string(t.dtype())) + ")");
  return std::string(static_cast<const char*>(t.raw_data()), t.bytes());
}

void connect_ring(KernelContext& ctx, int rank, int nranks, int ring_id) {
  CommunicatorManager& m = comms(ctx);
  std::string where = ctx.where() + "rank " + std::to_string(rank) + " of " +
                      std::to_string(nranks) + ", ring " + std::to_string(ring_id) + ": ";
  if (nranks < 1 || rank < 0 || rank >= nranks)
    throw Error(where + "the rank must be in [0, nranks)");
#ifdef CTP_HAVE_GLOO
  GlooRingSetup setup;
  try {
    setup.store = StoreAddress::from_bytes(id_bytes(ctx));
  } catch (const Error& e) {
    throw Error(where + e.what());
  }
  setup.rank = rank;
  setup.size = nranks;
  setup.ring_id = ring_id;
  if (!m.endpoint().empty()) {
    setup.bind_host = net::parse_endpoint(m.endpoint()).host;
    setup.label = m.endpoint();
    if (m.local_size() > 1) setup.label += " thread " + std::to_string(m.local_rank());
  }
  setup.options = m.options();
  try {
    m.install(ring_id, connect_gloo_ring(setup));
  } catch (const Error& e) {
    if (m.thread_group()) m.thread_group()->abort(e.what());
    throw Error(ctx.where() + e.what());
  }
#else
  (void)m;
  throw Error(where + "this build of ctp has no Gloo, so CPU runs cannot communicate across "
                      "processes (rebuild with -DCTP_WITH_GLOO=ON)");
#endif
}

// c_comm_init: one rank per process.
void c_comm_init(KernelContext& ctx) {
  CommunicatorManager& m = comms(ctx);
  if (m.local_size() > 1)
    throw Error(ctx.where() + "this process drives " + std::to_string(m.local_size()) +
                " device threads: their rings come from c_comm_init_multitrainer or "
                "c_comm_init_all, not c_comm_init");
  connect_ring(ctx, static_cast<int>(int_attr(ctx, "rank")),
               static_cast<int>(int_attr(ctx, "nranks")),
               static_cast<int>(int_attr(ctx, "ring_id", 0)));
}

// c_comm_init_multitrainer: ntrainers processes with the same number of
// device threads each; the ring spans every thread of every trainer, ranked
// trainer-major as Paddle's NCCL multi-trainer communicators are.
void c_comm_init_multitrainer(KernelContext& ctx) {
  CommunicatorManager& m = comms(ctx);
  int ntrainers = static_cast<int>(int_attr(ctx, "ntrainers"));
  int trainer_id = static_cast<int>(int_attr(ctx, "trainer_id"));
  if (ntrainers < 1 || trainer_id < 0 || trainer_id >= ntrainers)
    throw Error(ctx.where() + "trainer_id " + std::to_string(trainer_id) +
                " must be in [0, ntrainers=" + std::to_string(ntrainers) + ")");
  int local = m.local_size();
  connect_ring(ctx, trainer_id * local + m.local_rank(), ntrainers * local,
               static_cast<int>(int_attr(ctx, "ring_id", 0)));
}

// c_comm_init_all (Paddle 3: comm_init_all): a ring among the device threads
// of this process.
void c_comm_init_all(KernelContext& ctx) {
  CommunicatorManager& m = comms(ctx);
  int ring_id = static_cast<int>(int_attr(ctx, "ring_id", 0));
  std::vector<int64_t> devices = collective::ints_attr(ctx, "devices");
  if (!devices.empty() && static_cast<int>(devices.size()) != m.local_size())
    throw Error(ctx.where() + "attribute 'devices' lists " + std::to_string(devices.size()) +
                " device(s) but this process runs " + std::to_string(m.local_size()) +
                " device thread(s) (run the program on one thread per device)");
  std::shared_ptr<ThreadGroup> group;
  if (ThreadGroup* g = m.thread_group())
    group = g->shared_from_this();
  else  // one device: a ring of one thread
    group = std::make_shared<ThreadGroup>(1, m.options());
  m.install(ring_id, group->make_communicator(m.local_rank(), ring_id));
}

}  // namespace

CTP_REGISTER_KERNEL(c_gen_nccl_id, CPU, c_gen_nccl_id);
CTP_REGISTER_KERNEL(c_comm_init, CPU, c_comm_init);
CTP_REGISTER_KERNEL(c_comm_init_multitrainer, CPU, c_comm_init_multitrainer);
CTP_REGISTER_KERNEL(c_comm_init_all, CPU, c_comm_init_all);
CTP_REGISTER_KERNEL(comm_init_all, CPU, c_comm_init_all);  // Paddle 3's name

}  // namespace ctp
