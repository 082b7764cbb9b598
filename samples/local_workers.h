// The workers of one trainer process: one (inline) or several (each on its
// device thread, since collectives among threads need them concurrent), each
// with its device runtime, scope and executors of the training programs.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "executor/executor.h"
#include "executor/runtime/communicator.h"
#include "executor/runtime/device_runtime.h"
#include "executor/thread_group_driver.h"
#include "samples/feed_sources.h"
#include "samples/micro_batches.h"
#include "samples/trainer.h"
#include "samples/training_programs.h"

namespace ctp::samples {

struct Worker {
  int index = 0;  // among all workers of the job: process-major
  DeviceRuntime* runtime = nullptr;
  FeedBatch batch;  // this worker's host feeds, reused every step
  Scope scope;
  std::unique_ptr<Executor> startup, main, eval;
  // With --micro-batches: main's ops before the update, and the update.
  std::unique_ptr<Executor> compute, update;
};

// Whether the workers of `mode` start from different seeds by default: when
// the mode broadcasts the parameters at startup (grad_allreduce,
// local_sgd), so the broadcast is what makes them equal.
bool broadcasts_parameters(const std::string& mode);

class LocalWorkers {
 public:
  // `micro` (with TrainerOptions::micro_batches > 1) must outlive the workers,
  // as `programs` must.
  LocalWorkers(const TrainerOptions& o, int threads, const TrainingPrograms& programs,
               const MicroBatchPrograms* micro);

  // Runs body(worker) on every local worker: inline for one, else on its
  // device thread.
  void run(const std::function<void(Worker&)>& body);
  Worker& first() { return *workers_[0]; }
  std::size_t size() const { return workers_.size(); }

 private:
  // First, so destroyed last: the rings of the managers run on their streams.
  std::vector<std::unique_ptr<DeviceRuntime>> runtimes_;
  std::unique_ptr<CommunicatorManager> manager_;
  RunServices single_;
  std::unique_ptr<DeviceThreads> threads_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace ctp::samples
