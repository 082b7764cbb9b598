// ctp_sample_trainer: trains an MLP classifier on synthetic Gaussian clusters,
// or ResNet or BERT (samples/real_models.h) on synthetic data, with ctp's
// collective transpiler and executor, one process per worker (or one process
// driving several device threads), e.g.
//
//   ctp launch --nproc 2 -- ctp_sample_trainer --mode grad_allreduce --optimizer adam
//   ctp launch --nproc 2 -- ctp_sample_trainer --model resnet --depth 18 --width 8
//
// It prints a progress bar with the loss per step, and at the end the
// accuracy and whether every worker holds identical parameters (exit 1 if not).
#include <CLI/CLI.hpp>
#include <cmath>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "executor/worker_env.h"
#include "program_ir/atomic_file.h"
#include "program_ir/error.h"
#include "samples/trainer.h"
#include "tools/loss_scaling_flags.h"
#include "transpilers/options.h"

extern char** environ;

namespace {

struct Args {
  std::string model = "mlp";
  std::string mode = "grad_allreduce";
  std::string optimizer = "sgd";
  std::string dtype = "fp32";
  std::string amp = "none";
  std::optional<float> loss_scale;
  std::string device = "cpu";
  std::optional<int> rank, world_size;
  std::vector<std::string> endpoints;
  std::optional<double> timeout_s;
  std::optional<float> lr;  // unset: the optimizer's default
  std::string hidden = "64,64";
  std::optional<double> bucket_mb;
  ctp::cli::LossScalingFlags scaling;  // resnet and bert
};

// Bad options exit 2, as the ctp tool's usage errors do; failed runs exit 1.
constexpr int kExitUsage = 2;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A positive, finite value of a floating-point option (`--lr nan` is an
// error, not the default).
template <typename T>
T positive(T value, const char* option) {
  if (!(value > 0) || !std::isfinite(value))
    throw UsageError(std::string(option) + " must be a positive finite number");
  return value;
}

std::vector<int64_t> layer_widths(const std::string& text) {
  std::vector<int64_t> widths;
  std::stringstream items(text);
  for (std::string w; std::getline(items, w, ',');) {
    std::size_t used = 0;
    long long width = 0;
    try {
      width = std::stoll(w, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != w.size() || width < 1)
      throw UsageError("--hidden '" + text + "': '" + w + "' is not a positive layer width");
    widths.push_back(width);
  }
  return widths;
}

float default_learning_rate(ctp::samples::OptimizerKind kind) {
  switch (kind) {
    case ctp::samples::OptimizerKind::SGD: return 0.1f;
    case ctp::samples::OptimizerKind::Momentum: return 0.05f;
    case ctp::samples::OptimizerKind::Adam: return 0.01f;
  }
  return 0.1f;
}

// Rank, world size, endpoints and timeout: the command line wins over the
// launcher's variables (ctp launch, Paddle, torchrun, mpirun, Slurm).
void apply_identity(const Args& a, ctp::samples::TrainerOptions& o) {
  const ctp::WorkerIdentity id = ctp::worker_identity(ctp::environment_from(environ));
  o.rank = a.rank.value_or(id.rank);
  o.world_size = a.world_size.value_or(id.world_size);
  o.endpoints = a.endpoints.empty() ? id.endpoints : a.endpoints;
  o.job_id = id.job_id;
  if (a.timeout_s) {
    try {
      o.timeout = ctp::timeout_from_seconds(*a.timeout_s, "--timeout");
    } catch (const ctp::Error& e) {
      throw UsageError(e.what());
    }
  } else if (id.comm_timeout) {
    o.timeout = *id.comm_timeout;
  }
  o.check_finite = o.check_finite ||
                   ctp::boolean_variable(ctp::environment_from(environ), "FLAGS_check_nan_inf")
                       .value_or(false);
  const int local_rank = id.local_rank;
  const int gpu = id.selected_gpus.empty() ? local_rank : id.selected_gpus.front();
  o.device = a.device == "gpu" ? ctp::Device{ctp::DeviceKind::CUDA, gpu} : ctp::Device{};
}

// The options that are not plain fields of TrainerOptions; every error here
// is a usage error.
void apply_options(const Args& a, ctp::samples::TrainerOptions& o) {
  try {
    o.model.optimizer = ctp::samples::optimizer_from_string(a.optimizer);
  } catch (const ctp::Error& e) {
    throw UsageError(e.what());
  }
  o.model.learning_rate = a.lr ? positive(*a.lr, "--lr") : default_learning_rate(o.model.optimizer);
  o.model.dtype = a.dtype == "fp64" ? ctp::DataType::FP64 : ctp::DataType::FP32;
  if (a.amp != "none") o.model.amp = a.amp == "fp16" ? ctp::DataType::FP16 : ctp::DataType::BF16;
  // The MLP's own static scale; the real models scale by the AMP pass's
  // loss scaling (dynamic by default with fp16).
  o.model.loss_scale = a.loss_scale ? positive(*a.loss_scale, "--loss-scale")
                                    : (a.amp == "fp16" && a.model == "mlp" ? 1024.0f : 1.0f);
  if (a.model == "mlp" && (!a.scaling.mode.empty() || a.scaling.numbers_given))
    throw UsageError("--loss-scaling and its options apply to --model resnet and bert; the "
                     "MLP has its own static --loss-scale");
  try {
    if (a.model != "mlp") o.loss_scaling = ctp::cli::resolve_loss_scaling(a.scaling, a.amp);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  positive(o.spread, "--spread");
  o.model.hidden = layer_widths(a.hidden);
  o.model_kind = ctp::samples::model_kind_from_string(a.model);
  o.resnet.classes = o.model.classes;
  o.bert.classes = o.model.classes;
  o.mode = a.mode;
  if (a.bucket_mb) o.bucket_bytes = ctp::bucket_bytes_for_mib(positive(*a.bucket_mb, "--bucket-mb"));
}

// Each model's own options; giving one to another model is a usage error.
void check_model_options(const CLI::App& app, const std::string& model) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> own = {
      {"mlp", {"--hidden", "--dim", "--samples", "--spread"}},
      {"resnet", {"--depth", "--width", "--image-size"}},
      {"bert", {"--layers", "--hidden-size", "--heads", "--seq-len", "--vocab", "--attention"}},
  };
  for (const auto& [owner, options] : own)
    for (const std::string& option : options)
      if (owner != model && app.count(option) > 0)
        throw UsageError(option + " applies to --model " + owner + ", not --model " + model);
}

// --model and the real models' own options, with defaults small enough for
// a CPU to train them in seconds.
void add_real_model_options(CLI::App& app, Args& a, ctp::samples::TrainerOptions& o) {
  o.resnet.depth = 18;
  o.resnet.width = 8;
  o.resnet.image_size = 32;
  o.bert.layers = 2;
  o.bert.hidden = 32;
  o.bert.heads = 2;
  o.bert.seq_len = 16;
  o.bert.vocab = 64;
  app.add_option("--model", a.model, "mlp, resnet or bert")
      ->check(CLI::IsMember({"mlp", "resnet", "bert"}))
      ->capture_default_str();
  app.add_option("--depth", o.resnet.depth, "resnet: 18, 34, 50, 101 or 152")
      ->capture_default_str();
  app.add_option("--width", o.resnet.width, "resnet: channels of the stem (64 in ResNet-50)")
      ->capture_default_str();
  app.add_option("--image-size", o.resnet.image_size, "resnet: image height and width (>= 32)")
      ->capture_default_str();
  app.add_option("--layers", o.bert.layers, "bert: encoder layers")->capture_default_str();
  app.add_option("--hidden-size", o.bert.hidden, "bert: hidden size")->capture_default_str();
  app.add_option("--heads", o.bert.heads, "bert: attention heads")->capture_default_str();
  app.add_option("--seq-len", o.bert.seq_len, "bert: tokens per sequence")->capture_default_str();
  app.add_option("--vocab", o.bert.vocab, "bert: vocabulary size")->capture_default_str();
  app.add_option_function<std::string>(
         "--attention",
         [&o](const std::string& name) {
           o.bert.attention = ctp::samples::bert_attention_from_string(name);
         },
         "bert: self-attention op by op (ops) or as one flash_attn op (flash)")
      ->check(CLI::IsMember({"ops", "flash"}))
      ->default_str("ops");
  app.add_option("--init-params", o.init_params_dir,
                 "after the startup program, set every trainable parameter from DIR/<name>.npy "
                 "(Paddle's names; the files --save-params writes for one worker)");
  app.add_option("--micro-batches", o.micro_batches,
                 "mode none: run the forward and backward on K shards of each global batch and "
                 "average their gradients before one update: what K data-parallel workers "
                 "compute (batch_norm's statistics per shard)")
      ->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ctp sample trainer: an MLP classifier, ResNet or BERT trained data-parallel "
               "with ctp on synthetic data"};
  Args a;
  ctp::samples::TrainerOptions o;
  o.model.input_dim = 8;
  o.model.classes = 4;
  o.steps = 200;
  add_real_model_options(app, a, o);
  app.add_option("--mode", a.mode,
                 "none, grad_allreduce, local_sgd, single_process_multi_thread or multi_thread")
      ->capture_default_str();
  app.add_option("--optimizer", a.optimizer, "sgd, momentum or adam")->capture_default_str();
  app.add_option("--lr", a.lr, "learning rate (default: 0.1 sgd, 0.05 momentum, 0.01 adam)");
  app.add_option("--steps", o.steps, "training steps")->capture_default_str();
  app.add_option("--batch", o.global_batch, "global batch per step, split over all workers")
      ->capture_default_str();
  app.add_option("--hidden", a.hidden, "mlp: hidden layer widths, comma-separated")
      ->capture_default_str();
  app.add_option("--dim", o.model.input_dim, "mlp: input features")->capture_default_str();
  app.add_option("--classes", o.model.classes,
                 "classes (mlp: clusters; resnet: image classes; bert: token classes)")
      ->capture_default_str();
  app.add_option("--samples", o.samples, "mlp: data set size")->capture_default_str();
  app.add_option("--data-seed", o.data_seed, "seed of the data set")->capture_default_str();
  app.add_option("--spread", o.spread, "mlp: cluster standard deviation (higher is harder)")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "initializer seed of worker 0")->capture_default_str();
  app.add_option("--distinct-init", o.distinct_init,
                 "workers start from different parameters (default: when the mode broadcasts them)");
  app.add_option("--threads", o.threads,
                 "device threads in this process (default 2 for the single-process modes, else 1)");
  app.add_option("--nrings", o.nrings, "communication rings (default: the mode's)");
  app.add_option("--fuse-allreduce", o.fuse_allreduce,
                 "single_process_multi_thread: 0 per gradient, 1 coalesced, 2 xsum")
      ->capture_default_str();
  app.add_option("--bucket-mb", a.bucket_mb,
                 "grad_allreduce: all-reduce the gradients in buckets of about this many MiB, "
                 "each right after its last gradient (ctp's schedule; default: one call per "
                 "gradient, as the reference)");
  app.add_option("--trans-mode", o.trans_mode,
                 "multi_thread: fuse_all_reduce, all_gather or all_reduce")->capture_default_str();
  app.add_option("--op-dialect", o.op_dialect,
                 "op names of the transpiled programs: legacy (c_broadcast, c_allgather, "
                 "c_comm_init_all) or paddle3 (broadcast, all_gather, comm_init_all)")
      ->check(CLI::IsMember({"legacy", "paddle3"}))
      ->capture_default_str();
  app.add_option("--dtype", a.dtype, "fp32 or fp64")->check(CLI::IsMember({"fp32", "fp64"}))
      ->capture_default_str();
  app.add_option("--amp", a.amp,
                 "mixed precision: the MLP's layers compute (and its gradients are "
                 "all-reduced) in fp16 or bf16 on fp32 parameters; resnet and bert: through "
                 "the AMP rewrite pass (fp32 gradients), fp16 with dynamic loss scaling")
      ->check(CLI::IsMember({"none", "fp16", "bf16"}))->capture_default_str();
  app.add_option("--loss-scale", a.loss_scale,
                 "mlp: static loss scale (default: 1024 with --amp fp16, else 1)");
  ctp::cli::add_loss_scaling_flags(app, a.scaling);
  app.add_option("--device", a.device, "cpu or gpu")->check(CLI::IsMember({"cpu", "gpu"}))
      ->capture_default_str();
  app.add_option("--rank", a.rank, "this process's rank (default: from the launcher's variables)");
  app.add_option("--world-size", a.world_size, "processes (default: from the launcher's variables)");
  app.add_option("--endpoints", a.endpoints, "every process's host:port")->delimiter(',');
  app.add_option("--timeout", a.timeout_s,
                 "seconds to wait for a peer (default: CTP_COMM_TIMEOUT, else 300)");
  app.add_option("--log-every", o.log_every, "print a progress line every K steps (0: none)")
      ->capture_default_str();
  app.add_flag("--fixed-batch", o.fixed_batch,
               "feed step 0's batch at every step (benchmarks: no data made on the host per "
               "step; the batch is still uploaded every step)");
  app.add_flag("--profile", o.profile,
               "time every op of worker 0's main program (device time on a GPU) and print the "
               "most expensive after training; the first step is not counted");
  app.add_flag("--check-nan-inf", o.check_finite,
               "check every op's outputs for NaN/Inf and stop at the first op that writes one "
               "(slow; also FLAGS_check_nan_inf=1); without it a loss that is not finite still "
               "stops training, naming the first op whose output holds one");
  app.add_flag_callback("--no-op-batching", [&o] { o.batch_ops = false; },
               "run every op alone, even where the device has one kernel call for a run of "
               "independent ops of one type (the same results; to compare the two)");
  app.add_option("--save-params", o.save_params_dir,
                 "write each worker's parameters to DIR/worker<i>/<name>.npy");
  ctp::remove_staged_outputs_on_signals();  // --save-params leaves nothing half-written
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, or the error
    return code == 0 ? 0 : kExitUsage;
  }
  const auto usage_error = [](const std::exception& e) {
    std::cerr << "ctp_sample_trainer: usage error: " << e.what() << "\n";
    return kExitUsage;
  };
  try {
    check_model_options(app, a.model);
    apply_options(a, o);
    apply_identity(a, o);
  } catch (const UsageError& e) {
    return usage_error(e);
  } catch (const std::exception& e) {  // the launcher's variables
    std::cerr << "ctp_sample_trainer: error: " << e.what() << "\n";
    return 1;
  }
  try {
    ctp::samples::check_trainer_options(o);
  } catch (const std::exception& e) {
    return usage_error(e);
  }
  try {
    const ctp::samples::TrainerReport report = ctp::samples::run_trainer(o, std::cout);
    std::cout.flush();
    if (!std::cout) throw ctp::Error("cannot write to standard output");
    if (!report.identical()) {
      std::cerr << "ctp_sample_trainer: error: parameters differ across workers\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "ctp_sample_trainer: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
