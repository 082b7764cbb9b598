// The in-process communicator backend: CPU rings among the device threads of
// one process (c_comm_init_all), which meet in shared memory through their
// ThreadGroup. Its rings need no unique id.
#include "executor/runtime/comm_backend.h"
#include "executor/threads/thread_group.h"

namespace ctp {
namespace {

class ThreadRingBackend final : public CommBackend {
 public:
  std::string name() const override { return "threads"; }
  std::string make_unique_id(const RingIdRequest&) override { return ""; }

  std::unique_ptr<Communicator> connect(const RingSetup& setup) override {
    CommunicatorManager& m = *setup.comms;
    std::shared_ptr<ThreadGroup> group;
    if (LocalGroup* local = m.thread_group()) {
      auto* threads = dynamic_cast<ThreadGroup*>(local);
      if (!threads)
        throw Error("thread rank " + std::to_string(setup.rank) + ", ring " +
                    std::to_string(setup.ring_id) +
                    " (threads): this process's device threads are not an in-process "
                    "thread group");
      group = threads->shared_from_this();
    } else {
      group = std::make_shared<ThreadGroup>(1, m.options());  // one device: a ring of one
    }
    return group->make_communicator(setup.rank, setup.ring_id);
  }
};

}  // namespace

CTP_REGISTER_COMM_BACKEND(CPU, Threads, std::make_shared<ThreadRingBackend>());

}  // namespace ctp
