// On a GPU: an executor that frees intermediates after their last use
// (executor/var_release.h) gives the bits of one that keeps them, holds less
// device memory at its peak, and reuses freed memory from the stream-ordered
// pool (executor/cuda/cuda_buffer.cc) step after step.
#include <gtest/gtest.h>

#include <string>

#include "executor/executor.h"
#include "executor/runtime/memory_stats.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

// x -> 12 scale ops over a 4 MiB FP32 tensor -> mean.
Program scale_chain() {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  std::string previous = "x";
  for (int i = 0; i < 12; ++i) {
    const std::string out = "t" + std::to_string(i);
    b.append_op(test::make_op("scale", {{"X", {previous}}}, {{"Out", {out}}},
                              {{"scale", Attribute(1.01f)}, {"bias", Attribute(0.5f)}}));
    previous = out;
  }
  b.append_op(test::make_op("mean", {{"X", {previous}}}, {{"Out", {"loss"}}}));
  return p;
}

TEST(GpuVarRelease, FreedIntermediatesGiveTheSameBitsWithLessMemory) {
  CTP_REQUIRE_GPUS(1);
  DeviceContext device(0);
  RunServices services;
  services.device = device.device();
  services.device_context = &device;
  const Program program = scale_chain();
  const Tensor x = test::random_tensor({1024, 1024}, 7);  // FP64 on the host
  Tensor x32(DataType::FP32, {1024, 1024});
  for (int64_t i = 0; i < x32.numel(); ++i) x32.data<float>()[i] = static_cast<float>(x.data<double>()[i]);
  const int64_t mib = 1 << 20;
  const auto run = [&](bool release, int64_t& peak) {
    Scope scope;
    scope.var("x") = device.to_device(x32);
    Executor executor(program, services);
    executor.set_release_dead_vars(release);
    executor.keep_vars({"loss"});
    executor.run(scope);  // the first step fills the pool
    device.synchronize();
    reset_peak_memory(DeviceKind::CUDA);
    const int64_t before = memory_stats(DeviceKind::CUDA).current_bytes;
    for (int step = 0; step < 3; ++step) executor.run(scope);
    device.synchronize();
    peak = memory_stats(DeviceKind::CUDA).peak_bytes - before;
    const Tensor* t5 = scope.find("t5");
    EXPECT_EQ(t5 && t5->initialized(), !release);
    return test::values<float>(device.to_host(scope.get("loss")));
  };
  int64_t kept_peak = 0, freed_peak = 0;
  const std::vector<float> kept = run(false, kept_peak);
  const std::vector<float> freed = run(true, freed_peak);
  EXPECT_EQ(kept, freed);
  EXPECT_LE(kept_peak, mib);  // kept: every buffer made in step 1, reused since
  EXPECT_GE(freed_peak, 4 * mib);  // freed: made again each step, two at a time
  EXPECT_LE(freed_peak, 8 * mib + mib);
}

}  // namespace
}  // namespace ctp
