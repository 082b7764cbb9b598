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

#include "executor/finite_check.h"
#include "executor/op_profile.h"
#include "samples/cluster_data.h"
#include "samples/local_workers.h"
#include "samples/param_files.h"
#include "transpilers/transpile.h"

namespace ctp::samples {
namespace {

bool is_single_process_mode(const std::string& mode) {
  return mode == "single_process_multi_thread" || mode == "multi_thread";
}

int thread_count(const TrainerOptions& o) {
  if (o.threads > 0) return o.threads;
  return is_single_process_mode(o.mode) ? 2 : 1;
}

void transpile_programs(const TrainerOptions& o, int threads, TrainingPrograms& p) {
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

// A diverged run (the loss NaN or infinite) stops with the step and the
// first op whose output went bad, instead of training on to rc 0.
void stop_unless_finite(Worker& w, const TrainingPrograms& programs, int64_t step, const Tensor& loss) {
  const auto bad = non_finite_value(loss);
  if (!bad) return;
  // The step freed its intermediates (Executor::set_release_dead_vars):
  // which op made the first non-finite value is --check-nan-inf's to say.
  throw Error("step " + std::to_string(step + 1) + ", worker " + std::to_string(w.index) +
              ": the loss '" + programs.loss + "' " + *bad +
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

double accuracy(Worker& w, const TrainingPrograms& programs, const ClusterData& data, DataType dtype) {
  Batch all = rows(data, 0, data.size(), dtype);
  w.runtime->bind(w.scope, programs.inputs[0], all.features);
  w.runtime->bind(w.scope, programs.inputs[1], all.labels);
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

// The options of the real models and of --micro-batches.
void check_model_options(const TrainerOptions& o) {
  check_model_choice(ModelChoice{o.model_kind, o.model, o.resnet, o.bert, o.loss_scaling});
  if (o.micro_batches < 1) throw Error("--micro-batches must be 1 or more");
  if (o.micro_batches > 1) {
    if (o.mode != "none")
      throw Error("--micro-batches is the one-worker reference: it needs --mode none, not '" +
                  o.mode + "'");
    if (o.model.amp && o.model_kind == ModelKind::Mlp)
      throw Error("--micro-batches averages FP32 or FP64 gradients; the MLP's --amp makes "
                  "16-bit ones");
    if (o.global_batch % o.micro_batches != 0)
      throw Error("global batch " + std::to_string(o.global_batch) +
                  " does not split evenly into " + std::to_string(o.micro_batches) +
                  " micro-batches");
  }
}

void print_header(const TrainerOptions& o, const TrainingPrograms& programs, int threads,
                  std::ostream& out) {
  const int workers = o.world_size * threads;
  out << programs.description << ", mode " << o.mode << ": " << workers
      << " worker(s) = " << o.world_size << " process(es) x " << threads << " thread(s) on "
      << (o.device.kind == DeviceKind::CUDA ? "GPUs" : "CPUs") << "\n";
  switch (o.model_kind) {
    case ModelKind::Mlp:
      out << "data: " << o.samples << " samples in " << o.model.classes << " Gaussian clusters";
      break;
    case ModelKind::ResNet:
      out << "data: synthetic images, each its class's fixed random template plus noise, new "
             "every step";
      break;
    case ModelKind::Bert:
      out << "data: synthetic token ids, new every step, each token labelled by its id modulo "
          << o.bert.classes;
      break;
  }
  out << "; global batch " << o.global_batch << " (" << o.global_batch / workers
      << " per worker); " << o.steps << " steps\n";
  if (o.micro_batches > 1)
    out << "micro-batches: " << o.micro_batches << " shards of " << o.global_batch / o.micro_batches
        << " rows per step, gradients averaged before one update (what " << o.micro_batches
        << " data-parallel workers compute)\n";
  if (!o.init_params_dir.empty())
    out << "parameters from " << o.init_params_dir << "/<name>.npy\n";
  if (o.mode != "none" && o.op_dialect != "legacy")
    out << "op dialect " << o.op_dialect << ": the transpiled programs use Paddle 3's op names\n";
  if (o.mode == "multi_thread" && threads > 1)
    out << "note: multi_thread scales the loss gradient by the number of processes only (as "
           "the reference), so device threads add up their gradients\n";
  if (o.distinct_init.value_or(broadcasts_parameters(o.mode)) && workers > 1)
    out << "workers initialise with different seeds; the startup broadcast makes them equal\n";
  out.flush();
}

std::unique_ptr<FeedSource> make_feeds(const TrainerOptions& o, const ClusterData* clusters,
                                       FeedSource::HostAllocator allocate) {
  switch (o.model_kind) {
    case ModelKind::Mlp: return cluster_feeds(*clusters, o.model.dtype, std::move(allocate));
    case ModelKind::ResNet: return image_feeds(o.resnet, o.data_seed, std::move(allocate));
    case ModelKind::Bert: return token_feeds(o.bert, o.data_seed, std::move(allocate));
  }
  throw Error("unknown model");
}

// One step of one worker on its shard; returns its loss.
double train_step(Worker& w, const TrainingPrograms& programs, const FeedSource& feeds,
                  const TrainerOptions& o, int workers, int64_t step) {
  // --fixed-batch: step 0's batch again (its upload stays in the step).
  if (step == 0 || !o.fixed_batch) feeds.shard(step, o.global_batch, w.index, workers, w.batch);
  for (std::size_t i = 0; i < programs.inputs.size(); ++i)
    w.runtime->bind(w.scope, programs.inputs[i], w.batch.tensors[i]);
  w.main->run(w.scope);
  const Tensor loss = w.runtime->to_host(w.scope.get(programs.loss), w.main->services().comms);
  stop_unless_finite(w, programs, step, loss);
  return scalar(loss);
}

// One step of the --micro-batches reference (micro_batches.h); returns the
// mean of the shards' losses.
double micro_batch_step(Worker& w, const TrainingPrograms& programs,
                        const MicroBatchPrograms& micro, const FeedSource& feeds,
                        const TrainerOptions& o, int64_t step) {
  CommunicatorManager* comms = w.main->services().comms;
  GradientAccumulator gradients(micro.params_grads.size());
  double loss_sum = 0;
  for (int k = 0; k < o.micro_batches; ++k) {
    feeds.shard(step, o.global_batch, k, o.micro_batches, w.batch);
    for (std::size_t i = 0; i < programs.inputs.size(); ++i)
      w.runtime->bind(w.scope, programs.inputs[i], w.batch.tensors[i]);
    w.compute->run(w.scope);
    const Tensor loss = w.runtime->to_host(w.scope.get(programs.loss), comms);
    stop_unless_finite(w, programs, step, loss);
    loss_sum += scalar(loss);
    for (std::size_t g = 0; g < micro.params_grads.size(); ++g)
      gradients.add(g, w.runtime->to_host(w.scope.get(micro.params_grads[g].grad), comms));
  }
  for (std::size_t g = 0; g < micro.params_grads.size(); ++g)
    w.runtime->bind(w.scope, micro.params_grads[g].grad, gradients.result(g, o.micro_batches));
  w.update->run(w.scope);
  return loss_sum / o.micro_batches;
}

void print_step(const TrainerOptions& o, int64_t step, double loss, std::ostream& out) {
  if (o.rank != 0 || o.log_every <= 0 || ((step + 1) % o.log_every != 0 && step + 1 != o.steps))
    return;
  char line[160];
  std::snprintf(line, sizeof line, "step %*lld/%lld %s loss %.6f",
                static_cast<int>(std::to_string(o.steps).size()), static_cast<long long>(step + 1),
                static_cast<long long>(o.steps), progress_bar(step + 1, o.steps).c_str(), loss);
  out << line << std::endl;
}

// The largest parameter spread over every worker of the job, into `report`.
void compare_workers(const TrainerOptions& o, int threads, LocalWorkers& local,
                     const TrainingPrograms& programs, TrainerReport& report) {
  std::vector<double> spreads(local.size(), 0.0);
  std::vector<std::string> worst(local.size());
  if (report.workers > 1)
    local.run([&](Worker& w) {
      const std::size_t i = static_cast<std::size_t>(w.index - o.rank * threads);
      parameter_spread(w, programs.parameters, spreads[i], worst[i]);
    });
  for (std::size_t i = 0; i < spreads.size(); ++i)
    if (spreads[i] > report.max_param_difference) {
      report.max_param_difference = spreads[i];
      report.most_different_param = worst[i];
    }
}

void print_summary(const TrainerOptions& o, const TrainerReport& report, int64_t samples,
                   double seconds, std::ostream& out) {
  char summary[256];
  if (report.accuracy)
    std::snprintf(summary, sizeof summary,
                  "rank %d: accuracy %.1f%% on %lld samples (chance %.1f%%); %lld steps in %.2f s",
                  o.rank, 100.0 * *report.accuracy, static_cast<long long>(samples),
                  100.0 / static_cast<double>(o.model.classes), static_cast<long long>(o.steps),
                  seconds);
  else
    std::snprintf(summary, sizeof summary,
                  "rank %d: loss %.6f at the last step; %lld steps in %.2f s",
                  o.rank, report.losses.empty() ? 0.0 : report.losses.back(),
                  static_cast<long long>(o.steps), seconds);
  out << summary << "\n";
  if (o.steps > 1) {
    std::snprintf(summary, sizeof summary,
                  "rank %d: %.3f ms per step after the first (%lld steps; each includes the "
                  "batch upload and the loss read-back)",
                  o.rank, 1000.0 * report.seconds_per_step, static_cast<long long>(o.steps - 1));
    out << summary << "\n";
  }
}

// The loss scale the steps left, beside the one they started from.
std::optional<double> final_loss_scaling(const TrainerOptions& o, Worker& first,
                                         const TrainingPrograms& programs, std::ostream& out) {
  if (programs.loss_scaling.empty()) return std::nullopt;
  const Tensor scale =
      first.runtime->to_host(first.scope.get(programs.loss_scaling), first.main->services().comms);
  const double value = scale.data<float>()[0];
  out << "rank " << o.rank << ": loss scaling " << value << " after the last step (from "
      << o.loss_scaling->init_loss_scaling << ")\n";
  return value;
}

void print_buffers_and_agreement(const TrainerOptions& o, Worker& first,
                                 const TrainerReport& report, std::ostream& out) {
  if (report.fused_gradient_bytes)
    out << "rank " << o.rank << ": coalesced gradient buffer(s) on "
        << first.runtime->device().to_string() << ": " << report.fused_gradient_bytes
        << " bytes (" << report.fused_payload_bytes << " bytes of gradients + "
        << report.fused_gradient_bytes - report.fused_payload_bytes << " bytes of alignment)\n";
  const RunCounters& counters = first.main->services().counters;
  if (counters.coalesce_layouts)
    out << "rank " << o.rank << ": fused gradient buffers laid out " << counters.coalesce_layouts
        << " time(s), " << counters.coalesce_bytes_copied << " bytes copied into them in all\n";
  if (report.identical())
    out << "rank " << o.rank << ": parameters identical on all " << report.workers
        << " worker(s): yes\n";
  else
    out << "rank " << o.rank << ": parameters identical on all " << report.workers
        << " worker(s): NO (largest difference " << report.max_param_difference << " in "
        << report.most_different_param << ")\n";
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
    // The MLP's AMP program all-reduces 16-bit gradients; the AMP pass of
    // the real models leaves them FP32.
    const bool sixteen_bit_gradients = o.model.amp && o.model_kind == ModelKind::Mlp;
    if (o.mode == "multi_thread" && o.trans_mode == "all_gather" && sixteen_bit_gradients)
      throw Error("multi_thread all_gather hands adam the gathered gradients themselves (as the "
                  "reference), which under --amp are " + std::string(to_string(*o.model.amp)) +
                  " against FP32 parameters; use fuse_all_reduce or all_reduce");
    if (o.mode == "single_process_multi_thread" && o.fuse_allreduce == 1 && sixteen_bit_gradients)
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
  check_model_options(o);
  const int64_t workers = int64_t{o.world_size} * threads;
  if (o.global_batch < workers || o.global_batch % workers != 0)
    throw Error("global batch " + std::to_string(o.global_batch) + " does not split evenly over " +
                std::to_string(workers) + " workers");
}

TrainerReport run_trainer(const TrainerOptions& o, std::ostream& out) {
  const int threads = thread_count(o);
  check_trainer_options(o);
  const int workers = o.world_size * threads;
  TrainingPrograms programs = build_training_programs(
      ModelChoice{o.model_kind, o.model, o.resnet, o.bert, o.loss_scaling});
  transpile_programs(o, threads, programs);
  std::optional<MicroBatchPrograms> micro;
  if (o.micro_batches > 1) micro = split_at_update(programs.main);
  std::optional<ClusterData> clusters;
  if (o.model_kind == ModelKind::Mlp)
    clusters = make_clusters(o.samples, o.model.input_dim, o.model.classes, o.data_seed,
                             o.separation, o.spread);
  LocalWorkers local(o, threads, programs, micro ? &*micro : nullptr);
  // On GPUs the feeds sit in page-locked memory: batches upload from it
  // directly, at the copy engines' speed.
  DeviceRuntime& first_runtime = *local.first().runtime;
  const auto pinned = [&](DataType dtype, std::vector<int64_t> shape) {
    return first_runtime.host_tensor(dtype, std::move(shape));
  };
  const std::unique_ptr<FeedSource> feeds = make_feeds(o, clusters ? &*clusters : nullptr, pinned);
  if (o.rank == 0) print_header(o, programs, threads, out);

  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<OpProfile> profile;
  if (o.profile) {
    profile = std::make_unique<OpProfile>(local.first().runtime->make_op_timer());
    local.first().main->services().profile = profile.get();
  }
  local.run([&](Worker& w) {
    w.startup->run(w.scope);
    if (!o.init_params_dir.empty())
      load_parameters(o.init_params_dir, programs.parameters, *w.runtime, w.scope);
  });
  TrainerReport report;
  report.workers = workers;
  std::vector<double> step_losses(local.size());
  auto after_first_step = start;
  for (int64_t step = 0; step < o.steps; ++step) {
    if (step == 1) after_first_step = std::chrono::steady_clock::now();
    local.run([&](Worker& w) {
      step_losses[static_cast<std::size_t>(w.index - o.rank * threads)] =
          micro ? micro_batch_step(w, programs, *micro, *feeds, o, step)
                : train_step(w, programs, *feeds, o, workers, step);
    });
    double mean = 0;
    for (double l : step_losses) mean += l / static_cast<double>(step_losses.size());
    report.losses.push_back(mean);
    print_step(o, step, mean, out);
  }
  const auto end = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(end - start).count();
  if (o.steps > 1)
    report.seconds_per_step = std::chrono::duration<double>(end - after_first_step).count() /
                              static_cast<double>(o.steps - 1);

  compare_workers(o, threads, local, programs, report);
  if (clusters) report.accuracy = accuracy(local.first(), programs, *clusters, o.model.dtype);
  if (!o.save_params_dir.empty())
    local.run([&](Worker& w) {
      save_parameters((std::filesystem::path(o.save_params_dir) /
                       ("worker" + std::to_string(w.index))).string(),
                      programs.parameters, *w.runtime, w.scope, w.main->services().comms);
    });
  print_summary(o, report, clusters ? clusters->size() : 0, seconds, out);
  report.final_loss_scaling = final_loss_scaling(o, local.first(), programs, out);
  report.fused_gradient_bytes = fused_buffer_footprint(local.first(), programs.main,
                                                       report.fused_payload_bytes);
  print_buffers_and_agreement(o, local.first(), report, out);
  if (profile) profile->print(out);
  out.flush();
  return report;
}

}  // namespace ctp::samples
