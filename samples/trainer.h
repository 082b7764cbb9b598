// The sample trainer's work for one process: build the training programs of
// the chosen model (the MLP, ResNet or BERT: training_programs.h), transpile
// them for the chosen mode, train on this process's shards of a synthetic
// data set (feed_sources.h; one device thread per local worker), and report
// the loss per step, the MLP's accuracy and whether every worker ends with
// identical parameters. trainer_main.cc maps the command line onto these
// options.
#pragma once
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "executor/runtime/tensor.h"
#include "samples/training_programs.h"

namespace ctp::samples {

struct TrainerOptions {
  // "none" (one worker, no rewrite) or a transpile mode: grad_allreduce,
  // local_sgd, single_process_multi_thread, multi_thread.
  std::string mode = "grad_allreduce";
  ModelKind model_kind = ModelKind::Mlp;
  // The MLP's shape; for every model the optimizer and precision.
  MlpConfig model;
  ResNetConfig resnet;  // with ModelKind::ResNet
  BertConfig bert;      // with ModelKind::Bert
  // resnet and bert under --amp: Paddle's loss scaling (unset: none).
  std::optional<LossScalingOptions> loss_scaling;
  int64_t samples = 4096;  // data set size
  uint64_t data_seed = 7;
  double separation = 2.0, spread = 1.0;  // cluster centres' and points' std
  int64_t steps = 100;
  int64_t global_batch = 64;  // over all workers; each takes an equal share
  uint64_t seed = 1;          // initializer seed of worker 0
  // Workers start from different parameters (seed + worker index). Default:
  // when the mode broadcasts parameters at startup (grad_allreduce,
  // local_sgd), so the broadcast is what makes them equal.
  std::optional<bool> distinct_init;
  int threads = 0;  // device threads in this process; 0: 2 for the single-process modes, else 1
  std::optional<int> nrings;
  int fuse_allreduce = 1;                    // single_process_multi_thread
  int64_t bucket_bytes = 0;                  // grad_allreduce: 0 one call per gradient
  std::string trans_mode = "fuse_all_reduce";  // multi_thread
  std::string op_dialect = "legacy";  // the transpile's op names: legacy or paddle3

  // This process among the job's processes (from the launcher's variables).
  int rank = 0;
  int world_size = 1;
  std::vector<std::string> endpoints;
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  std::string job_id;            // CommOptions::job_id (CTP_JOB_ID from ctp launch)
  Device device;                 // the first device thread's; CUDA threads take index + i
  int log_every = 1;             // per-step lines (progress bar and loss), process 0 only
  std::string save_params_dir;   // when set: DIR/worker<g>/<param>.npy after training
  std::string init_params_dir;   // when set: every worker's parameters from DIR/<param>.npy
  // Mode none only: each step runs the forward and backward on this many
  // shards of the global batch and averages their gradients before one
  // update (micro_batches.h).
  int micro_batches = 1;
  // Feed step 0's batch at every step instead of making a new one (for
  // benchmarks: making ResNet-50's images on the host would dominate a GPU
  // step). The batch is still uploaded every step.
  bool fixed_batch = false;
  bool profile = false;          // time every op of worker 0's main program; print after training
  bool batch_ops = true;         // RunServices::batch_ops (off: every op alone, for comparison)
  // RunServices::check_finite: stop at the first op that writes NaN/Inf.
  // Without it, a loss that is not finite still stops training, naming the
  // step and the first op whose output holds a non-finite value.
  bool check_finite = false;
};

struct TrainerReport {
  std::vector<double> losses;  // per step, mean over this process's workers
  // Of worker 0 of this process on the whole data set (the MLP; the real
  // models have no evaluation: nullopt).
  std::optional<double> accuracy;
  // The loss scale after the last step (worker 0 of this process), with loss scaling.
  std::optional<double> final_loss_scaling;
  double max_param_difference = 0;  // over every worker and parameter element
  std::string most_different_param;
  int workers = 1;
  double seconds_per_step = 0;  // wall time per step after the first (0 for < 2 steps)
  // The coalesced gradient buffers (coalesce_tensor's FusedOutput), bytes in
  // all and bytes of the gradients in them (the rest is alignment); 0 when
  // the mode fuses nothing.
  uint64_t fused_gradient_bytes = 0;
  uint64_t fused_payload_bytes = 0;
  bool identical() const { return max_param_difference == 0; }
};

// Throws ctp::Error naming the first option (or combination of options, with
// the job's rank and world size) that cannot be trained.
void check_trainer_options(const TrainerOptions& options);

// Throws ctp::Error on invalid options or a failed run (naming the worker).
TrainerReport run_trainer(const TrainerOptions& options, std::ostream& out);

}  // namespace ctp::samples
