// The sample trainer's GPU path (`ctp_sample_trainer --device gpu`), end to
// end through run_trainer: one process per GPU (two ranks on threads of this
// process, NCCL rings over the loopback rendezvous, as `ctp launch --nproc 2`
// runs it) and one process driving two GPUs (device threads,
// c_comm_init_all). Final parameters, saved with --save-params (so the
// device-to-host copies are part of the test), must match a CPU run's
// within FP32 tolerance; mixed-precision runs within 16-bit tolerance.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>

#include <unistd.h>

#include "executor/runtime/npy.h"
#include "samples/trainer.h"
#include "tests/comm_test_util.h"
#include "tests/gpu/gpu_test_util.h"

namespace ctp {
namespace {

using Params = std::map<std::string, std::vector<float>>;

samples::TrainerOptions small_run(const std::string& mode, samples::OptimizerKind optimizer) {
  samples::TrainerOptions o;
  o.mode = mode;
  o.model.input_dim = 6;
  o.model.hidden = {24, 16};
  o.model.classes = 3;
  o.model.optimizer = optimizer;
  o.model.learning_rate = optimizer == samples::OptimizerKind::Adam ? 0.01f : 0.1f;
  o.samples = 512;
  o.steps = 25;
  o.global_batch = 32;
  o.seed = 3;
  o.log_every = 0;
  o.timeout = std::chrono::seconds(60);
  return o;
}

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ctp_gpu_trainer_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

Params read_worker(const std::filesystem::path& dir, int worker) {
  Params out;
  const auto worker_dir = dir / ("worker" + std::to_string(worker));
  for (const auto& entry : std::filesystem::directory_iterator(worker_dir)) {
    const Tensor t = read_npy_file(entry.path().string());
    EXPECT_EQ(t.dtype(), DataType::FP32) << entry.path();
    out[entry.path().stem().string()] =
        std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
  }
  return out;
}

void expect_close(const Params& want, const Params& got, double rtol, const std::string& who) {
  ASSERT_FALSE(want.empty()) << who;
  ASSERT_EQ(want.size(), got.size()) << who;
  for (const auto& [name, values] : want) {
    ASSERT_TRUE(got.count(name)) << who << ": no " << name;
    gpu_testing::expect_parameter_close(values, got.at(name), rtol,
                                        who + ": parameter " + name + " differs from the CPU's");
  }
}

// Options `o` as `ctp launch` gives them to process `rank` of `n`, one GPU
// each (GPU = local rank), saving parameters under `dir`.
samples::TrainerOptions as_launched_rank(samples::TrainerOptions o, int rank, int n,
                                         const std::vector<std::string>& endpoints,
                                         const std::filesystem::path& dir) {
  o.rank = rank;
  o.world_size = n;
  o.endpoints = endpoints;
  o.device = Device{DeviceKind::CUDA, rank};
  o.save_params_dir = dir.string();
  return o;
}

// Trains `o` in this process and returns worker 0's saved parameters.
Params train_in_this_process(samples::TrainerOptions o, const std::string& tag,
                             std::string* output = nullptr) {
  const auto dir = fresh_dir(tag);
  o.save_params_dir = dir.string();
  std::ostringstream out;
  const samples::TrainerReport report = samples::run_trainer(o, out);
  EXPECT_TRUE(report.identical()) << tag;
  if (output) *output = out.str();
  Params p = read_worker(dir, 0);
  std::filesystem::remove_all(dir);
  return p;
}

// One CPU worker on the whole global batch: what data-parallel workers on
// shards of it must reproduce (their gradients are averaged).
Params train_one_cpu_worker(samples::OptimizerKind optimizer, const std::string& tag) {
  return train_in_this_process(small_run("none", optimizer), "cpu_" + tag);
}

TEST(GpuSampleTrainer, OneProcessPerGpuMatchesOneCpuWorker) {
  CTP_REQUIRE_GPUS(2);
  constexpr int n = 2;
  for (auto optimizer : {samples::OptimizerKind::SGD, samples::OptimizerKind::Adam}) {
    const std::string tag = samples::to_string(optimizer);
    const Params cpu = train_one_cpu_worker(optimizer, tag);
    const auto dir = fresh_dir("gpu_" + tag);
    const auto endpoints = testing_comm::local_endpoints(n);
    std::vector<std::string> outputs(n);
    std::vector<samples::TrainerReport> reports(n);
    gpu_testing::run_on_threads(n, [&](int rank) {
      const samples::TrainerOptions o =
          as_launched_rank(small_run("grad_allreduce", optimizer), rank, n, endpoints, dir);
      std::ostringstream out;
      reports[rank] = samples::run_trainer(o, out);
      outputs[rank] = out.str();
    });
    SCOPED_TRACE(outputs[0]);
    EXPECT_NE(outputs[0].find("2 worker(s) = 2 process(es) x 1 thread(s) on GPUs"),
              std::string::npos);
    for (int rank = 0; rank < n; ++rank) {
      EXPECT_TRUE(reports[rank].identical()) << "rank " << rank;
      EXPECT_EQ(reports[rank].losses.size(), 25u);
      expect_close(cpu, read_worker(dir, rank), 1e-4, tag + ", GPU worker " + std::to_string(rank));
    }
    std::filesystem::remove_all(dir);
  }
}

TEST(GpuSampleTrainer, OneProcessDrivingTwoGpusMatchesTheCpu) {
  CTP_REQUIRE_GPUS(2);
  // The same single-process mode on CPU device threads (in-process ring) and
  // on two GPUs (NCCL ring from c_comm_init_all), gradients coalesced.
  const auto train = [](Device device, const std::string& tag, samples::TrainerReport& report,
                        std::string& output) {
    samples::TrainerOptions o = small_run("single_process_multi_thread",
                                          samples::OptimizerKind::Momentum);
    o.threads = 2;
    o.fuse_allreduce = 1;
    o.device = device;
    const auto dir = fresh_dir(tag);
    o.save_params_dir = dir.string();
    std::ostringstream out;
    report = samples::run_trainer(o, out);
    output = out.str();
    std::vector<Params> params{read_worker(dir, 0), read_worker(dir, 1)};
    std::filesystem::remove_all(dir);
    return params;
  };
  samples::TrainerReport cpu_report, gpu_report;
  std::string cpu_output, gpu_output;
  const auto cpu = train(Device{}, "threads_cpu", cpu_report, cpu_output);
  const auto gpu = train(Device{DeviceKind::CUDA, 0}, "threads_gpu", gpu_report, gpu_output);
  SCOPED_TRACE(gpu_output);
  EXPECT_TRUE(gpu_report.identical());
  // The coalesced gradient buffer and its footprint, on the GPU as on the CPU.
  EXPECT_GT(gpu_report.fused_gradient_bytes, gpu_report.fused_payload_bytes);
  EXPECT_EQ(gpu_report.fused_payload_bytes, cpu_report.fused_payload_bytes);
  EXPECT_NE(gpu_output.find("coalesced gradient buffer(s) on gpu:0: " +
                            std::to_string(gpu_report.fused_gradient_bytes) + " bytes"),
            std::string::npos);
  expect_close(cpu[0], gpu[0], 1e-4, "GPU thread 0");
  expect_close(cpu[0], gpu[1], 1e-4, "GPU thread 1");
}

// Paddle 3's op names (broadcast, all_gather, comm_init_all) on the CUDA
// kernels of the reference's: the same runs give the same parameters in both
// dialects, bit for bit.
TEST(GpuSampleTrainer, Paddle3DialectTrainsToTheSameParameters) {
  CTP_REQUIRE_GPUS(2);
  std::map<std::string, std::vector<Params>> by_dialect;
  for (const std::string dialect : {"legacy", "paddle3"}) {
    // broadcast: two ranks, one GPU each, initialised apart.
    const auto dir = fresh_dir("dialect_ga_" + dialect);
    const auto endpoints = testing_comm::local_endpoints(2);
    gpu_testing::run_on_threads(2, [&](int rank) {
      samples::TrainerOptions o = as_launched_rank(
          small_run("grad_allreduce", samples::OptimizerKind::SGD), rank, 2, endpoints, dir);
      o.distinct_init = true;
      o.op_dialect = dialect;
      std::ostringstream out;
      EXPECT_TRUE(samples::run_trainer(o, out).identical()) << dialect << " rank " << rank;
    });
    by_dialect[dialect].push_back(read_worker(dir, 0));
    by_dialect[dialect].push_back(read_worker(dir, 1));
    std::filesystem::remove_all(dir);
    // comm_init_all and all_gather: one process driving two GPUs.
    samples::TrainerOptions o = small_run("multi_thread", samples::OptimizerKind::Adam);
    o.trans_mode = "all_gather";
    o.threads = 2;
    o.device = Device{DeviceKind::CUDA, 0};
    o.op_dialect = dialect;
    by_dialect[dialect].push_back(train_in_this_process(o, "dialect_mt_" + dialect));
  }
  ASSERT_EQ(by_dialect["legacy"].size(), by_dialect["paddle3"].size());
  for (std::size_t i = 0; i < by_dialect["legacy"].size(); ++i)
    EXPECT_EQ(by_dialect["legacy"][i], by_dialect["paddle3"][i]) << "run " << i;
}

// Mixed precision: 16-bit GEMMs on cuBLAS accumulate in another order than
// the CPU's, so each step's 16-bit results may differ in the last bit; the
// FP32 parameters must still follow the CPU's closely.
samples::TrainerOptions mixed_run(const std::string& mode, DataType amp) {
  samples::TrainerOptions o = small_run(mode, samples::OptimizerKind::SGD);
  o.model.amp = amp;
  o.model.loss_scale = amp == DataType::FP16 ? 1024.0f : 1.0f;
  return o;
}

TEST(GpuSampleTrainer, MixedPrecisionOnOneGpuFollowsTheCpu) {
  CTP_REQUIRE_GPUS(1);
  for (DataType amp : {DataType::BF16, DataType::FP16}) {
    const std::string tag = "amp_" + std::string(to_string(amp));
    const Params cpu = train_in_this_process(mixed_run("none", amp), tag + "_cpu");
    samples::TrainerOptions o = mixed_run("none", amp);
    o.device = Device{DeviceKind::CUDA, 0};
    std::string output;
    const Params gpu = train_in_this_process(o, tag + "_gpu", &output);
    EXPECT_NE(output.find(std::string(to_string(amp)) + " compute and gradients"),
              std::string::npos) << output;
    expect_close(cpu, gpu, 2e-2, tag + ", one GPU");
  }
}

// The casts and updates of every parameter run as a few multi-tensor
// launches (executor/op_batching.h); training must not change by a bit.
TEST(GpuSampleTrainer, OpBatchingLeavesTrainingUnchanged) {
  CTP_REQUIRE_GPUS(1);
  using samples::OptimizerKind;
  struct Case {
    DataType amp;
    OptimizerKind optimizer;
    // Input and parameter casts, casts back, (FP16: unscaling,) updates;
    // without AMP the updates.
    const char* runs;
  };
  for (const Case& c : {Case{DataType::BF16, OptimizerKind::SGD, "19 ops ran in 3 batches"},
                        Case{DataType::FP16, OptimizerKind::SGD, "25 ops ran in 4 batches"},
                        Case{DataType::BF16, OptimizerKind::Adam, "19 ops ran in 3 batches"},
                        Case{DataType::FP32, OptimizerKind::SGD, "6 ops ran in 1 batch "},
                        Case{DataType::FP32, OptimizerKind::Momentum, "6 ops ran in 1 batch "},
                        Case{DataType::FP32, OptimizerKind::Adam, "6 ops ran in 1 batch "}}) {
    const std::string tag = "batching_" + std::string(to_string(c.amp)) + "_" +
                            std::to_string(static_cast<int>(c.optimizer));
    samples::TrainerOptions o = small_run("none", c.optimizer);
    if (c.amp != DataType::FP32) {
      o.model.amp = c.amp;
      o.model.loss_scale = c.amp == DataType::FP16 ? 1024.0f : 1.0f;
    }
    o.device = Device{DeviceKind::CUDA, 0};
    o.profile = true;
    std::string output;
    const Params batched = train_in_this_process(o, tag + "_on", &output);
    EXPECT_NE(output.find(c.runs), std::string::npos) << tag << "\n" << output;
    o.batch_ops = false;
    o.profile = false;
    const Params alone = train_in_this_process(o, tag + "_off");
    EXPECT_EQ(batched, alone) << tag;
  }
}

// A small BERT whose attention is one flash_attn op per layer (sequence 24,
// no multiple of a tile; 2 heads of 16), trained 3 steps on one GPU and on
// the CPU: FP32 within FP32 rounding of the CPU's parameters, BF16 (--amp
// bf16: flash_attn in BF16, P and dS rounded to 16 bits on the GPU only)
// within 16-bit tolerance. The profile shows that the GPU ran both ops.
TEST(GpuSampleTrainer, BertWithFlashAttentionFollowsTheCpu) {
  CTP_REQUIRE_GPUS(1);
  for (DataType amp : {DataType::FP32, DataType::BF16}) {
    const std::string tag = "bert_flash_" + std::string(to_string(amp));
    samples::TrainerOptions o = small_run("none", samples::OptimizerKind::SGD);
    o.model_kind = samples::ModelKind::Bert;
    o.bert.layers = 2;
    o.bert.hidden = 32;
    o.bert.heads = 2;
    o.bert.seq_len = 24;
    o.bert.max_position = 24;
    o.bert.vocab = 64;
    o.bert.classes = 4;
    o.bert.attention = samples::BertAttention::Flash;
    if (amp != DataType::FP32) o.model.amp = amp;
    o.global_batch = 4;
    o.steps = 3;
    const Params cpu = train_in_this_process(o, tag + "_cpu");
    o.device = Device{DeviceKind::CUDA, 0};
    o.profile = true;
    std::string output;
    const Params gpu = train_in_this_process(o, tag + "_gpu", &output);
    EXPECT_NE(output.find("flash_attn_grad"), std::string::npos) << output;
    expect_close(cpu, gpu, amp == DataType::FP32 ? 1e-4 : 2e-2, tag + ", one GPU");
  }
}

TEST(GpuSampleTrainer, MixedPrecisionOnTwoGpusAllReducesSixteenBitGradients) {
  CTP_REQUIRE_GPUS(2);
  constexpr int n = 2;
  for (DataType amp : {DataType::BF16, DataType::FP16}) {
    const std::string tag = "amp2_" + std::string(to_string(amp));
    const Params cpu = train_in_this_process(mixed_run("none", amp), tag + "_cpu");
    const auto dir = fresh_dir(tag + "_gpu");
    const auto endpoints = testing_comm::local_endpoints(n);
    std::vector<samples::TrainerReport> reports(n);
    gpu_testing::run_on_threads(n, [&](int rank) {
      const samples::TrainerOptions o =
          as_launched_rank(mixed_run("grad_allreduce", amp), rank, n, endpoints, dir);
      std::ostringstream out;
      reports[rank] = samples::run_trainer(o, out);
    });
    for (int rank = 0; rank < n; ++rank) {
      EXPECT_TRUE(reports[rank].identical()) << tag << " rank " << rank;
      expect_close(cpu, read_worker(dir, rank), 5e-2, tag + ", GPU worker " + std::to_string(rank));
    }
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace ctp
