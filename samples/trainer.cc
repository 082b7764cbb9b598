#include "samples/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <filesystem>
#include <memory>
#include <ostream>
#include <sstream>

#include "executor/runtime/communicator.h"
#include "executor/runtime/device_runtime.h"
#include "executor/executor.h"
#include "executor/finite_check.h"
#include "executor/runtime/npy.h"
#include "executor/op_profile.h"
#include "executor/thread_group_driver.h"
#include "program_ir/atomic_file.h"
#include "samples/cluster_data.h"
#include "transpilers/transpile.h"

namespace ctp::samples {
namespace {

bool is_single_process_mode(const std::string& mode) {
  return mode == "single_process_multi_thread" || mode == "multi_thread";
}

bool broadcasts_parameters(const std::string& mode) {
  return mode == "grad_allreduce" || mode == "local_sgd";
}

int thread_count(const TrainerOptions& o) {
  if (o.threads > 0) return o.threads;
  return is_single_process_mode(o.mode) ? 2 : 1;
}

void transpile_programs(const TrainerOptions& o, int threads, MlpPrograms& p) {
  if (o.mode == "none") return;
  TranspileOptions t;
  t.collective.nrings = o.nrings;
  t.collective.rank = o.rank;
  // One process needs no reachable endpoint: rank 0 only listens for peers.
  t.collective.endpoints = o.endpoints.empty() ? std::vector<std::string>{"127.0.0.1:6170"}
                                               : o.endpoints;
  t.collective.current_endpoint = t.collective.endpoints[static_cast<std::size_t>(o.rank)];
  t.single_process_multi_thread.fuse_allreduce = o.fuse_allreduce;
  t.grad_allreduce.bucket_bytes = o.bucket_bytes;
  t.single_process_multi_thread.gpu_nums = threads;
  t.multi_thread.gpu_num = threads;
  t.multi_thread.trans_mode = parse_multi_thread_trans_mode(o.trans_mode);
  t.collective.dialect = parse_op_dialect(o.op_dialect);
  transpile(parse_transpile_mode(o.mode), t, p.startup, p.main);
}

struct Worker {
  int index = 0;  // among all workers of the job: process-major
  DeviceRuntime* runtime = nullptr;
  Batch batch;  // this worker's host batch, reused every step
  Scope scope;
  std::unique_ptr<Executor> startup, main, eval;
};

// Runs body(local worker) on every local worker: inline for one, else on
// its device thread (collectives among threads need them concurrent).
class LocalWorkers {
 public:
  LocalWorkers(const TrainerOptions& o, int threads, const MlpPrograms& programs) {
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
      w->startup = std::make_unique<Executor>(programs.startup, s);
      w->main = std::make_unique<Executor>(programs.main, s);
      w->eval = std::make_unique<Executor>(programs.eval, s);
      workers_.push_back(std::move(w));
    }
  }

  void run(const std::function<void(Worker&)>& body) {
    if (!threads_) {
      body(*workers_[0]);
      return;
    }
    threads_->run([&](int local, RunServices&) { body(*workers_[static_cast<std::size_t>(local)]); });
  }
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

// A diverged run (the loss NaN or infinite) stops with the step and the
// first op whose output went bad, instead of training on to rc 0.
void stop_unless_finite(Worker& w, const MlpPrograms& programs, int64_t step, const Tensor& loss) {
  const auto bad = non_finite_value(loss);
  if (!bad) return;
  const auto source = first_non_finite_op(programs.main.global_block(), w.scope,
                                          w.main->services().device_session);
  throw Error("step " + std::to_string(step + 1) + ", worker " + std::to_string(w.index) +
              ": the loss '" + programs.loss + "' " + *bad +
              (source ? "; the first op whose output holds a non-finite value: " + *source
                      : std::string()) +
              " (--check-nan-inf stops at the op that produces the first one)");
}

double scalar(const Tensor& t) {
  return t.dtype() == DataType::FP64 ? t.data<double>()[0] : t.data<float>()[0];
}

std::string progress_bar(int64_t step, int64_t steps) {
  constexpr int64_t kWidth = 24;
  const int64_t filled = steps ? step * kWidth / steps : kWidth;
  return "[" + std::string(static_cast<std::size_t>(filled), '#') +
         std::string(static_cast<std::size_t>(kWidth - filled), '-') + "]";
}

// The largest elementwise spread of every parameter over all workers (max
// minus min through all-reduces on ring 0): 0 exactly when all are equal.
void parameter_spread(Worker& w, const std::vector<std::string>& params, double& spread,
                      std::string& worst) {
  CommunicatorManager* comms = w.main->services().comms;
  Communicator& ring = comms->get(0);
  spread = 0;
  for (const std::string& name : params) {
    const Tensor p = w.runtime->to_host(w.scope.get(name), comms);
    Tensor high_on_device = w.runtime->copy_to_device(p);
    Tensor low_on_device = w.runtime->copy_to_device(p);
    ring.all_reduce(high_on_device, ReduceOp::Max);
    ring.all_reduce(low_on_device, ReduceOp::Min);
    const Tensor high = w.runtime->to_host(high_on_device, comms);
    const Tensor low = w.runtime->to_host(low_on_device, comms);
    for (int64_t i = 0; i < p.numel(); ++i) {
      const double d = p.dtype() == DataType::FP64 ? high.data<double>()[i] - low.data<double>()[i]
                                                   : high.data<float>()[i] - low.data<float>()[i];
      if (d > spread) {
        spread = d;
        worst = name;
      }
    }
  }
}

double accuracy(Worker& w, const MlpPrograms& programs, const ClusterData& data, DataType dtype) {
  Batch all = rows(data, 0, data.size(), dtype);
  w.runtime->bind(w.scope, programs.input, all.features);
  w.runtime->bind(w.scope, programs.label, all.labels);
  w.eval->run(w.scope);
  const Tensor p = w.runtime->to_host(w.scope.get(programs.probabilities), w.eval->services().comms);
  const int64_t classes = data.classes;
  int64_t correct = 0;
  for (int64_t i = 0; i < data.size(); ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c) {
      const auto at = [&](int64_t k) {
        return dtype == DataType::FP64 ? p.data<double>()[i * classes + k]
                                       : static_cast<double>(p.data<float>()[i * classes + k]);
      };
      if (at(c) > at(best)) best = c;
    }
    correct += best == data.labels[static_cast<std::size_t>(i)];
  }
  return static_cast<double>(correct) / static_cast<double>(data.size());
}

void save_parameters(const TrainerOptions& o, Worker& w, const std::vector<std::string>& params) {
  const std::filesystem::path dir =
      std::filesystem::path(o.save_params_dir) / ("worker" + std::to_string(w.index));
  OutputSet output(dir.string());  // every parameter of the worker, or none
  output.make_directories(dir.string());
  for (const std::string& name : params)
    output.stage((dir / (name + ".npy")).string(),
                 tensor_to_npy(w.runtime->to_host(w.scope.get(name), w.main->services().comms)));
  output.commit();
}

// The bytes of the fused buffers coalesce_tensor made in `main` (0 when it
// has none) and, in `payload`, of the gradients viewed in them.
uint64_t fused_buffer_footprint(Worker& w, const Program& main, uint64_t& payload) {
  uint64_t total = 0;
  payload = 0;
  for (const Op& op : main.global_block().ops()) {
    if (op.type != "coalesce_tensor") continue;
    const auto* fused = op.output("FusedOutput");
    if (!fused || fused->empty()) continue;
    if (const Tensor* t = w.scope.find((*fused)[0]); t && t->initialized()) total += t->bytes();
    if (const auto* views = op.output("Output"))
      for (const std::string& name : *views)
        if (const Tensor* t = w.scope.find(name); t && t->initialized()) payload += t->bytes();
  }
  return total;
}

std::string precision_note(const MlpConfig& model) {
  std::string note = ", " + std::string(to_string(model.dtype));
  if (model.amp) note += " parameters, " + std::string(to_string(*model.amp)) + " compute and gradients";
  if (model.loss_scale != 1.0f) {
    std::ostringstream scale;
    scale << model.loss_scale;
    note += ", loss scale " + scale.str();
  }
  return note;
}

}  // namespace

void check_trainer_options(const TrainerOptions& o) {
  const int threads = thread_count(o);
  if (o.steps < 0) throw Error("steps must be 0 or more");
  if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size)
    throw Error("rank " + std::to_string(o.rank) + " is not in [0, world size " +
                std::to_string(o.world_size) + ")");
  if (o.mode == "none") {
    if (o.world_size * threads != 1)
      throw Error("mode 'none' trains one worker; use a transpile mode for " +
                  std::to_string(o.world_size * threads) + " workers");
  } else {
    parse_transpile_mode(o.mode);  // throws for an unknown mode
    parse_multi_thread_trans_mode(o.trans_mode);  // and for an unknown --trans-mode
    parse_op_dialect(o.op_dialect);               // and --op-dialect
    if (threads > 1 && !is_single_process_mode(o.mode))
      throw Error("mode '" + o.mode + "' runs one device per process; --threads " +
                  std::to_string(threads) + " needs single_process_multi_thread or multi_thread");
    if (o.mode == "multi_thread" && o.trans_mode == "all_gather" &&
        o.model.optimizer != OptimizerKind::Adam)
      throw Error("multi_thread all_gather applies the gathered gradients through adam ops only "
                  "(as the reference's _update_adam_ops); use the adam optimizer");
    if (o.mode == "multi_thread" && o.trans_mode == "all_gather" && o.model.amp)
      throw Error("multi_thread all_gather hands adam the gathered gradients themselves (as the "
                  "reference), which under --amp are " + std::string(to_string(*o.model.amp)) +
                  " against FP32 parameters; use fuse_all_reduce or all_reduce");
    if (o.mode == "single_process_multi_thread" && o.fuse_allreduce == 1 && o.model.amp)
      throw Error("single_process_multi_thread coalesces gradients into an FP32 buffer (as the "
                  "reference), not " + std::string(to_string(*o.model.amp)) +
                  " ones; with --amp use --fuse-allreduce 0 or 2, or multi_thread, which "
                  "coalesces each dtype apart");
    if (!o.endpoints.empty() && static_cast<int>(o.endpoints.size()) != o.world_size)
      throw Error(std::to_string(o.endpoints.size()) + " endpoints for " +
                  std::to_string(o.world_size) + " processes");
    if (o.endpoints.empty() && o.world_size > 1)
      throw Error("the endpoints of the " + std::to_string(o.world_size) +
                  " processes are unknown (start the workers with ctp launch, or set "
                  "PADDLE_TRAINER_ENDPOINTS)");
  }
  const int64_t workers = int64_t{o.world_size} * threads;
  if (o.global_batch < workers || o.global_batch % workers != 0)
    throw Error("global batch " + std::to_string(o.global_batch) + " does not split evenly over " +
                std::to_string(workers) + " workers");
}

TrainerReport run_trainer(const TrainerOptions& o, std::ostream& out) {
  const int threads = thread_count(o);
  check_trainer_options(o);
  const int workers = o.world_size * threads;
  const bool leader = o.rank == 0;
  MlpPrograms programs = build_mlp(o.model);
  transpile_programs(o, threads, programs);
  const ClusterData data =
      make_clusters(o.samples, o.model.input_dim, o.model.classes, o.data_seed, o.separation, o.spread);
  LocalWorkers local(o, threads, programs);
  // On GPUs the data set sits in page-locked memory: batches upload from it
  // directly, at the copy engines' speed.
  DeviceRuntime& first_runtime = *local.first().runtime;
  const BatchSource batches(data, o.model.dtype, [&](DataType dtype, std::vector<int64_t> shape) {
    return first_runtime.host_tensor(dtype, std::move(shape));
  });

  if (leader) {
    std::string shape = std::to_string(o.model.input_dim);
    for (int64_t h : o.model.hidden) shape += "-" + std::to_string(h);
    out << "MLP " << shape << "-" << o.model.classes << ", " << to_string(o.model.optimizer)
        << " (lr " << o.model.learning_rate << ")" << precision_note(o.model) << ", mode "
        << o.mode << ": " << workers
        << " worker(s) = " << o.world_size << " process(es) x " << threads << " thread(s) on "
        << (o.device.kind == DeviceKind::CUDA ? "GPUs" : "CPUs") << "\n"
        << "data: " << o.samples << " samples in " << o.model.classes
        << " Gaussian clusters; global batch " << o.global_batch << " (" << o.global_batch / workers
        << " per worker); " << o.steps << " steps\n";
    if (o.mode != "none" && o.op_dialect != "legacy")
      out << "op dialect " << o.op_dialect << ": the transpiled programs use Paddle 3's op names\n";
    if (o.mode == "multi_thread" && threads > 1)
      out << "note: multi_thread scales the loss gradient by the number of processes only (as "
             "the reference), so device threads add up their gradients\n";
    if (o.distinct_init.value_or(broadcasts_parameters(o.mode)) && workers > 1)
      out << "workers initialise with different seeds; the startup broadcast makes them equal\n";
    out.flush();
  }

  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<OpProfile> profile;
  if (o.profile) {
    profile = std::make_unique<OpProfile>(local.first().runtime->make_op_timer());
    local.first().main->services().profile = profile.get();
  }
  local.run([&](Worker& w) { w.startup->run(w.scope); });
  TrainerReport report;
  report.workers = workers;
  std::vector<double> step_losses(local.size());
  auto after_first_step = start;
  for (int64_t step = 0; step < o.steps; ++step) {
    if (step == 1) after_first_step = std::chrono::steady_clock::now();
    local.run([&](Worker& w) {
      Batch& b = w.batch;
      batches.shard(step, o.global_batch, w.index, workers, b);
      w.runtime->bind(w.scope, programs.input, b.features);
      w.runtime->bind(w.scope, programs.label, b.labels);
      w.main->run(w.scope);
      const Tensor loss = w.runtime->to_host(w.scope.get(programs.loss), w.main->services().comms);
      stop_unless_finite(w, programs, step, loss);
      step_losses[static_cast<std::size_t>(w.index - o.rank * threads)] = scalar(loss);
    });
    double mean = 0;
    for (double l : step_losses) mean += l / static_cast<double>(step_losses.size());
    report.losses.push_back(mean);
    if (leader && o.log_every > 0 && ((step + 1) % o.log_every == 0 || step + 1 == o.steps)) {
      char line[160];
      std::snprintf(line, sizeof line, "step %*lld/%lld %s loss %.6f",
                    static_cast<int>(std::to_string(o.steps).size()), static_cast<long long>(step + 1),
                    static_cast<long long>(o.steps), progress_bar(step + 1, o.steps).c_str(), mean);
      out << line << std::endl;
    }
  }
  const auto end = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(end - start).count();
  if (o.steps > 1)
    report.seconds_per_step = std::chrono::duration<double>(end - after_first_step).count() /
                              static_cast<double>(o.steps - 1);

  std::vector<double> spreads(local.size(), 0.0);
  std::vector<std::string> worst(local.size());
  if (workers > 1)
    local.run([&](Worker& w) {
      const std::size_t i = static_cast<std::size_t>(w.index - o.rank * threads);
      parameter_spread(w, programs.parameters, spreads[i], worst[i]);
    });
  for (std::size_t i = 0; i < spreads.size(); ++i)
    if (spreads[i] > report.max_param_difference) {
      report.max_param_difference = spreads[i];
      report.most_different_param = worst[i];
    }
  report.accuracy = accuracy(local.first(), programs, data, o.model.dtype);
  if (!o.save_params_dir.empty())
    local.run([&](Worker& w) { save_parameters(o, w, programs.parameters); });

  char summary[256];
  std::snprintf(summary, sizeof summary,
                "rank %d: accuracy %.1f%% on %lld samples (chance %.1f%%); %lld steps in %.2f s",
                o.rank, 100.0 * report.accuracy, static_cast<long long>(data.size()),
                100.0 / static_cast<double>(o.model.classes), static_cast<long long>(o.steps), seconds);
  out << summary << "\n";
  if (o.steps > 1) {
    std::snprintf(summary, sizeof summary,
                  "rank %d: %.3f ms per step after the first (%lld steps; each includes the "
                  "batch upload and the loss read-back)",
                  o.rank, 1000.0 * report.seconds_per_step, static_cast<long long>(o.steps - 1));
    out << summary << "\n";
  }
  report.fused_gradient_bytes = fused_buffer_footprint(local.first(), programs.main,
                                                       report.fused_payload_bytes);
  if (report.fused_gradient_bytes)
    out << "rank " << o.rank << ": coalesced gradient buffer(s) on "
        << local.first().runtime->device().to_string() << ": " << report.fused_gradient_bytes
        << " bytes (" << report.fused_payload_bytes << " bytes of gradients + "
        << report.fused_gradient_bytes - report.fused_payload_bytes << " bytes of alignment)\n";
  const RunCounters& counters = local.first().main->services().counters;
  if (counters.coalesce_layouts)
    out << "rank " << o.rank << ": fused gradient buffers laid out " << counters.coalesce_layouts
        << " time(s), " << counters.coalesce_bytes_copied << " bytes copied into them in all\n";
  if (report.identical())
    out << "rank " << o.rank << ": parameters identical on all " << workers << " worker(s): yes\n";
  else
    out << "rank " << o.rank << ": parameters identical on all " << workers
        << " worker(s): NO (largest difference " << report.max_param_difference << " in "
        << report.most_different_param << ")\n";
  if (profile) profile->print(out);
  out.flush();
  return report;
}

}  // namespace ctp::samples
