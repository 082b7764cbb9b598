// ProgramRunner (the engine of `ctp run --device gpu`) on GPUs: inputs moved
// into device buffers, fetched values brought back to the host, rings on the
// device's streams. One rank per GPU (GradAllReduce, NCCL over the loopback
// rendezvous) and one process driving two GPUs (single_process_multi_thread
// on DeviceThreads, as `ctp run --threads 2`), each against the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "executor/runtime/communicator.h"
#include "executor/runtime/device_runtime.h"
#include "executor/program_runner.h"
#include "executor/thread_group_driver.h"
#include "samples/mlp_model.h"
#include "tests/comm_test_util.h"
#include "tests/gpu/gpu_test_util.h"
#include "transpilers/transpile.h"

namespace ctp {
namespace {

constexpr int kSteps = 12;
constexpr int64_t kBatch = 16;

samples::MlpConfig model() {
  samples::MlpConfig config;
  config.input_dim = 5;
  config.hidden = {20, 12};
  config.classes = 4;
  config.optimizer = samples::OptimizerKind::Adam;
  config.learning_rate = 0.01f;
  return config;
}

struct Outcome {
  std::vector<double> losses;                        // fetched, per step
  std::map<std::string, std::vector<float>> params;  // after the last step
};

void record(ProgramRunner& runner, DeviceRuntime& runtime, CommunicatorManager* comms,
            const std::vector<std::string>& params, Outcome& out) {
  for (int s = 0; s < kSteps; ++s) {
    const Fetched fetched = runner.run_step();
    ASSERT_EQ(fetched.size(), 1u);
    const Tensor& loss = fetched[0].second;
    ASSERT_EQ(loss.device().kind, DeviceKind::CPU) << "fetched values come back to the host";
    out.losses.push_back(loss.data<float>()[0]);
  }
  for (const std::string& p : params) {
    const Tensor& held = runner.scope().get(p);
    EXPECT_EQ(held.device(), runtime.device()) << p;
    const Tensor host = runtime.to_host(held, comms);
    out.params[p] = std::vector<float>(host.data<float>(), host.data<float>() + host.numel());
  }
}

void expect_close(const Outcome& want, const Outcome& got, const std::string& who) {
  ASSERT_EQ(want.losses.size(), got.losses.size()) << who;
  for (std::size_t s = 0; s < want.losses.size(); ++s)
    EXPECT_NEAR(got.losses[s], want.losses[s], 1e-4 * std::max(1.0, std::abs(want.losses[s])))
        << who << ", loss of step " << s + 1;
  ASSERT_EQ(want.params.size(), got.params.size()) << who;
  for (const auto& [name, values] : want.params)
    gpu_testing::expect_parameter_close(values, got.params.at(name), 1e-4,
                                        who + ": parameter " + name);
}

TEST(GpuProgramRunner, OneRankPerGpuMatchesOneCpuWorker) {
  CTP_REQUIRE_GPUS(2);
  constexpr int n = 2;
  // Every rank is fed the same batch: the averaged gradient is then exactly
  // the single worker's, which the all-reduce must reproduce.
  const samples::MlpPrograms reference = samples::build_mlp(model());
  Tensor x(DataType::FP32, {kBatch, 5});
  Tensor label(DataType::INT64, {kBatch, 1});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(0.37f * float(i));
  for (int64_t i = 0; i < kBatch; ++i) label.data<int64_t>()[i] = (i * 7) % 4;

  Outcome cpu;
  {
    DeviceRuntime runtime(Device{});
    ProgramRunOptions o;
    o.seed = 9;
    o.runtime = &runtime;
    o.feeds = {{reference.input, x}, {reference.label, label}};
    ProgramRunner runner(reference.startup, reference.main, o);
    runner.run_startup();
    record(runner, runtime, nullptr, reference.parameters, cpu);
  }
  const auto endpoints = testing_comm::local_endpoints(n);
  std::vector<Outcome> gpu(n);
  gpu_testing::run_on_threads(n, [&](int rank) {
    samples::MlpPrograms programs = samples::build_mlp(model());
    TranspileOptions t;
    t.collective.endpoints = endpoints;
    t.collective.rank = rank;
    t.collective.current_endpoint = endpoints[rank];
    transpile(TranspileMode::kGradAllReduce, t, programs.startup, programs.main);
    DeviceRuntime runtime(Device{DeviceKind::CUDA, rank});
    CommunicatorManager comms(CommOptions{std::chrono::seconds(60)});
    ProgramRunOptions o;
    o.seed = 9;
    o.rank = rank;
    o.device = runtime.device();
    o.runtime = &runtime;
    o.comms = &comms;
    o.feeds = {{programs.input, x}, {programs.label, label}};
    ProgramRunner runner(programs.startup, programs.main, o);
    runner.run_startup();
    record(runner, runtime, &comms, programs.parameters, gpu[rank]);
    comms.get(0).barrier();
  });
  expect_close(cpu, gpu[0], "GPU rank 0");
  expect_close(cpu, gpu[1], "GPU rank 1");
}

// Two device threads of one process, synthetic inputs (different per
// thread), as `ctp run --threads 2 [--device gpu]` sets them up.
std::vector<Outcome> run_on_device_threads(DeviceKind kind, const samples::MlpPrograms& programs) {
  constexpr int n = 2;
  std::vector<std::unique_ptr<DeviceRuntime>> runtimes;
  for (int i = 0; i < n; ++i)
    runtimes.push_back(std::make_unique<DeviceRuntime>(
        Device{kind, kind == DeviceKind::CUDA ? i : 0}));
  DeviceThreads threads(n, CommOptions{std::chrono::seconds(60)}, RunServices{},
                        {runtimes[0]->device(), runtimes[1]->device()});
  std::vector<std::unique_ptr<ProgramRunner>> runners;
  for (int i = 0; i < n; ++i) {
    ProgramRunOptions o;
    o.batch = kBatch;
    o.seed = 4;
    o.rank = i;
    o.device = runtimes[i]->device();
    o.runtime = runtimes[i].get();
    o.comms = &threads.comms(i);
    runners.push_back(std::make_unique<ProgramRunner>(programs.startup, programs.main, o));
  }
  std::vector<Outcome> out(n);
  threads.run([&](int i, RunServices&) {
    runners[i]->run_startup();
    record(*runners[i], *runtimes[i], &threads.comms(i), programs.parameters, out[i]);
  });
  return out;
}

TEST(GpuProgramRunner, TwoGpusOfOneProcessMatchTwoCpuThreads) {
  CTP_REQUIRE_GPUS(2);
  samples::MlpPrograms programs = samples::build_mlp(model());
  TranspileOptions t;
  t.collective.endpoints = {"127.0.0.1:6170"};
  t.collective.current_endpoint = "127.0.0.1:6170";
  t.single_process_multi_thread.gpu_nums = 2;
  t.single_process_multi_thread.fuse_allreduce = 1;
  transpile(TranspileMode::kSingleProcessMultiThread, t, programs.startup, programs.main);
  const std::vector<Outcome> cpu = run_on_device_threads(DeviceKind::CPU, programs);
  const std::vector<Outcome> gpu = run_on_device_threads(DeviceKind::CUDA, programs);
  expect_close(cpu[0], gpu[0], "GPU thread 0");
  expect_close(cpu[1], gpu[1], "GPU thread 1");
  EXPECT_EQ(gpu[0].params, gpu[1].params) << "the threads must hold identical parameters";
}

}  // namespace
}  // namespace ctp
