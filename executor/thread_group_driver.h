// Runs one program on G device threads of one process (the single-process
// multi-device modes). Each thread has its own RunServices and
// CommunicatorManager, joined to one ThreadGroup so that c_comm_init_all
// builds in-process communicators among them; the managers persist across
// run() calls, so the startup program's rings serve the main program's steps.
//
//   DeviceThreads threads(4, CommOptions{}, base_services);
//   threads.run([&](int local_rank, RunServices& services) {
//     executor.run(startup, scopes[local_rank], services);
//   });
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "executor/runtime/communicator.h"
#include "executor/runtime/kernel.h"
#include "executor/threads/thread_group.h"

namespace ctp {

class DeviceThreads {
 public:
  // `base` is copied to every thread; its `comms` is replaced by the
  // thread's own manager. `devices`, when given, sets each thread's device
  // (CUDA: one GPU per thread); otherwise every thread keeps base.device.
  DeviceThreads(int count, CommOptions options, const RunServices& base,
                std::vector<Device> devices = {});
  DeviceThreads(const DeviceThreads&) = delete;
  DeviceThreads& operator=(const DeviceThreads&) = delete;

  int size() const { return static_cast<int>(services_.size()); }
  RunServices& services(int local_rank) { return services_.at(local_rank); }
  CommunicatorManager& comms(int local_rank) { return *managers_.at(local_rank); }
  const std::shared_ptr<ThreadGroup>& group() const { return group_; }

  // Runs body on every device thread and waits for all of them. When one
  // throws, the others' waits are aborted so they end promptly, and the
  // first failure is rethrown as a ctp::Error prefixed "device thread N: ".
  void run(const std::function<void(int local_rank, RunServices& services)>& body);

 private:
  std::shared_ptr<ThreadGroup> group_;
  std::vector<std::unique_ptr<CommunicatorManager>> managers_;
  std::vector<RunServices> services_;
};

}  // namespace ctp
