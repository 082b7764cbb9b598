#include "executor/communicator.h"

#include "program_ir/error.h"

namespace ctp {

void CommunicatorManager::install(int ring_id, std::unique_ptr<Communicator> comm) {
  std::lock_guard<std::mutex> lock(mu_);
  rings_[ring_id] = std::move(comm);
}

Communicator& CommunicatorManager::get(int ring_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = rings_.find(ring_id);
  if (it == rings_.end())
    throw Error("ring " + std::to_string(ring_id) +
                " is not initialized (run c_comm_init for it first)");
  return *it->second;
}

bool CommunicatorManager::has(int ring_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return rings_.count(ring_id) != 0;
}

void CommunicatorManager::abort_all(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [ring, comm] : rings_) comm->abort(reason);
}

}  // namespace ctp
