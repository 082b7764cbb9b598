#include "samples/local_workers.h"

namespace ctp::samples {

bool broadcasts_parameters(const std::string& mode) {
  return mode == "grad_allreduce" || mode == "local_sgd";
}

LocalWorkers::LocalWorkers(const TrainerOptions& o, int threads, const TrainingPrograms& programs,
                           const MicroBatchPrograms* micro) {
  CommOptions comm;
  comm.timeout = o.timeout;
  comm.job_id = o.job_id;
  comm.rank = o.rank;
  comm.world_size = o.world_size;
  // CUDA: one GPU per device thread, from the process's first.
  for (int i = 0; i < threads; ++i)
    runtimes_.push_back(std::make_unique<DeviceRuntime>(
        Device{o.device.kind, o.device.index + (o.device.kind == DeviceKind::CUDA ? i : 0)}));
  RunServices base;
  base.device = o.device;
  base.batch_ops = o.batch_ops;
  base.check_finite = o.check_finite;
  std::vector<RunServices*> services;
  if (threads == 1) {
    manager_ = std::make_unique<CommunicatorManager>(comm);
    base.comms = manager_.get();
    single_ = base;
    services.push_back(&single_);
  } else {
    std::vector<Device> devices;
    for (const auto& runtime : runtimes_) devices.push_back(runtime->device());
    threads_ = std::make_unique<DeviceThreads>(threads, comm, base, devices);
    for (int i = 0; i < threads; ++i) services.push_back(&threads_->services(i));
  }
  const bool distinct = o.distinct_init.value_or(broadcasts_parameters(o.mode));
  for (int i = 0; i < threads; ++i) {
    auto w = std::make_unique<Worker>();
    w->index = o.rank * threads + i;
    w->runtime = runtimes_[static_cast<std::size_t>(i)].get();
    RunServices& s = *services[static_cast<std::size_t>(i)];
    s.device_context = w->runtime->context();
    s.device_session = w->runtime->session();
    s.seed = o.seed + (distinct ? static_cast<uint64_t>(w->index) : 0);
    // The step programs free their intermediates after their last use,
    // except the vars the trainer reads after a step; the startup program
    // (run once) keeps everything.
    w->startup = std::make_unique<Executor>(programs.startup, s);
    w->main = std::make_unique<Executor>(programs.main, s);
    w->main->keep_vars({programs.loss});
    w->main->set_release_dead_vars(true);
    if (programs.eval) {
      w->eval = std::make_unique<Executor>(*programs.eval, s);
      w->eval->keep_vars({programs.probabilities});
      w->eval->set_release_dead_vars(true);
    }
    if (micro) {
      w->compute = std::make_unique<Executor>(micro->compute, s);
      std::vector<std::string> read_after{programs.loss};
      for (const ParamGrad& pg : micro->params_grads) read_after.push_back(pg.grad);
      w->compute->keep_vars(read_after);
      w->compute->set_release_dead_vars(true);
      w->update = std::make_unique<Executor>(micro->update, s);
      w->update->set_release_dead_vars(true);
    }
    workers_.push_back(std::move(w));
  }
}

void LocalWorkers::run(const std::function<void(Worker&)>& body) {
  if (!threads_) {
    body(*workers_[0]);
    return;
  }
  threads_->run([&](int local, RunServices&) { body(*workers_[static_cast<std::size_t>(local)]); });
}

}  // namespace ctp::samples
