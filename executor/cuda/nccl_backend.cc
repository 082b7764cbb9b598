// The NCCL communicator backend, registered when libctp_cuda is loaded, for
// GPU rings both across processes and among the device threads of one
// process. A ring's unique id is two NCCL ids, the non-blocking probe's and
// the blocking ring's (nccl_communicator.h).
#include "executor/cuda/nccl_communicator.h"
#include "executor/runtime/comm_backend.h"

namespace ctp {
namespace {

class NcclBackend final : public CommBackend {
 public:
  std::string name() const override { return "nccl"; }
  std::string make_unique_id(const RingIdRequest&) override { return make_nccl_ring_ids(); }

  std::unique_ptr<Communicator> connect(const RingSetup& ring) override {
    const SourceLocation at{
        .rank = ring.rank, .nranks = ring.size, .ring = ring.ring_id, .backend = "nccl"};
    NcclRingSetup setup;
    set_ring_ids(setup, ring.unique_id, at);
    setup.rank = ring.rank;
    setup.size = ring.size;
    setup.ring_id = ring.ring_id;
    setup.device = ring.device_context;  // connect() names a missing one
    setup.options = ring.comms->options();
    if (setup.device) setup.device->make_current();
    std::unique_ptr<Communicator> comm = NcclCommunicator::connect(setup);
    setup.device->comm_stream(ring.ring_id);  // exists before c_sync_calc_stream needs it
    return comm;
  }
};

}  // namespace

CTP_REGISTER_COMM_BACKEND(CUDA, Processes, std::make_shared<NcclBackend>());
CTP_REGISTER_COMM_BACKEND(CUDA, Threads, std::make_shared<NcclBackend>());

}  // namespace ctp
