#include "executor/thread_group_driver.h"

#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "program_ir/error.h"

namespace ctp {

DeviceThreads::DeviceThreads(int count, CommOptions options, const RunServices& base,
                             std::vector<Device> devices) {
  if (count < 1) throw Error("device threads: need at least one thread, not " + std::to_string(count));
  if (!devices.empty() && static_cast<int>(devices.size()) != count)
    throw Error("device threads: " + std::to_string(count) + " threads but " +
                std::to_string(devices.size()) + " devices");
  group_ = std::make_shared<ThreadGroup>(count, options);
  for (int r = 0; r < count; ++r) {
    managers_.push_back(std::make_unique<CommunicatorManager>(options));
    managers_.back()->join_thread_group(group_, r);
    RunServices s = base;
    s.comms = managers_.back().get();
    if (!devices.empty()) s.device = devices[r];
    services_.push_back(s);
  }
}

void DeviceThreads::run(const std::function<void(int, RunServices&)>& body) {
  std::mutex mu;
  // The first failure that is not merely the echo of an abort is the cause.
  std::exception_ptr first;
  int first_rank = -1;
  bool first_is_echo = false;
  auto fail = [&](int rank, std::exception_ptr e, const std::string& what, bool echo) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (first && (echo || !first_is_echo)) return;
      bool had = first != nullptr;
      first = e;
      first_rank = rank;
      first_is_echo = echo;
      if (had) return;  // the group is aborted already
    }
    // Peers blocked in a collective with the failed thread would otherwise
    // wait out the whole timeout.
    std::string reason = "device thread " + std::to_string(rank) + " failed: " + what;
    group_->abort(reason);
    for (auto& m : managers_) m->abort_all(reason);
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r, services_[r]);
      } catch (const CommAbortedError& e) {
        fail(r, std::current_exception(), e.what(), true);
      } catch (const std::exception& e) {
        fail(r, std::current_exception(), e.what(), false);
      } catch (...) {
        fail(r, std::current_exception(), "unknown exception", false);
      }
    });
  }
  for (auto& t : threads) t.join();
  if (!first) return;
  // The error says which thread failed; a ctp::Error keeps its place.
  const std::string thread = "device thread " + std::to_string(first_rank) + ": ";
  try {
    std::rethrow_exception(first);
  } catch (const Error& e) {
    throw Error(e.place(), thread + e.message());
  } catch (const std::exception& e) {
    throw Error(thread + e.what());
  }
}

}  // namespace ctp
