// On a GPU: an executor that frees intermediates after their last use
// (executor/var_release.h) gives the bits of one that keeps them, holds less
// device memory at its peak, and reuses freed memory from the stream-ordered
// pool (executor/cuda/cuda_buffer.cc) step after step; it frees the elements
// of vars that later ops read only for their shape early, and the CUDA
// kernels of those ops need no elements.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "executor/executor.h"
#include "executor/runtime/memory_stats.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/kernels_test_util.h"
#include "tests/shape_only_cases.h"

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

// x -> a -> b (4 MiB each); c = a + b; the gradient of that add reads a
// and b only for their shapes, so a step frees their elements after the add.
Program shape_read_chain() {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  const auto scale = [&](const char* in, const char* out, float by) {
    b.append_op(
        test::make_op("scale", {{"X", {in}}}, {{"Out", {out}}}, {{"scale", Attribute(by)}}));
  };
  scale("x", "a", 2.0f);
  scale("a", "b", 3.0f);
  b.append_op(test::make_op("elementwise_add", {{"X", {"a"}}, {"Y", {"b"}}}, {{"Out", {"c"}}}));
  scale("c", "dc", 0.5f);
  b.append_op(test::make_op("elementwise_add_grad",
                            {{"X", {"a"}}, {"Y", {"b"}}, {"Out@GRAD", {"dc"}}},
                            {{"X@GRAD", {"da"}}, {"Y@GRAD", {"db"}}}));
  b.append_op(test::make_op("elementwise_sub", {{"X", {"da"}}, {"Y", {"db"}}}, {{"Out", {"g"}}}));
  return p;
}

TEST(GpuVarRelease, ShapeOnlyReadsLetElementsGoEarlyWithTheSameBits) {
  CTP_REQUIRE_GPUS(1);
  DeviceContext device(0);
  RunServices services;
  services.device = device.device();
  services.device_context = &device;
  const Program program = shape_read_chain();
  const Tensor x = test::random_fp32({1024, 1024}, 7);
  const int64_t mib = 1 << 20;
  const auto run = [&](bool release, int64_t& peak) {
    Scope scope;
    scope.var("x") = device.to_device(x);
    Executor executor(program, services);
    executor.set_release_dead_vars(release);
    executor.keep_vars({"g"});
    executor.run(scope);
    device.synchronize();
    reset_peak_memory(DeviceKind::CUDA);
    const int64_t before = memory_stats(DeviceKind::CUDA).current_bytes;
    executor.run(scope);
    device.synchronize();
    peak = memory_stats(DeviceKind::CUDA).peak_bytes - before;
    return test::values<float>(device.to_host(scope.get("g")));
  };
  int64_t kept_peak = 0, freed_peak = 0;
  const std::vector<float> kept = run(false, kept_peak);
  const std::vector<float> freed = run(true, freed_peak);
  EXPECT_EQ(kept, freed);
  // Freed: at most 3 of the 4 MiB tensors at once (a, b, c at the add; c, dc
  // then; dc, da, db at the grad). Holding a and b to the grad would be 5.
  EXPECT_GE(freed_peak, 3 * 4 * mib);
  EXPECT_LE(freed_peak, 3 * 4 * mib + mib);
}

// The CUDA kernel of every op that declares shape-only inputs gives the CPU
// kernel's results when those inputs have no elements.
TEST(GpuVarRelease, ShapeOnlyInputsNeedNoElementsInCudaKernels) {
  CTP_REQUIRE_GPUS(1);
  DeviceContext device(0);
  RunServices gpu;
  gpu.device = device.device();
  gpu.device_context = &device;
  for (const auto& [type, c] : test::shape_only_cases()) {
    SCOPED_TRACE(type);
    const OpDef* schema = OpRegistry::global().find(type);
    ASSERT_NE(schema, nullptr);
    Scope on_cpu, on_gpu;
    for (const Slot& slot : c.op.inputs)
      for (const std::string& name : slot.args) {
        const Tensor& t = c.inputs.at(name);
        on_cpu.var(name) = t;
        on_gpu.var(name) = schema->reads_only_shape_of(slot.name)
                               ? Tensor::without_elements(t.dtype(), t.shape())
                               : device.to_device(t);
      }
    test::run_op(on_cpu, c.op);
    test::run_op(on_gpu, c.op, gpu);
    device.synchronize();
    for (const Slot& slot : c.op.outputs)
      for (const std::string& name : slot.args) {
        const Tensor& want = on_cpu.get(name);
        const Tensor got = device.to_host(on_gpu.get(name));
        ASSERT_EQ(got.dtype(), want.dtype()) << name;
        ASSERT_EQ(got.shape(), want.shape()) << name;
        if (want.dtype() != DataType::FP32) {
          EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.bytes()), 0) << name;
          continue;
        }
        const std::vector<float> g = test::values<float>(got), w = test::values<float>(want);
        for (std::size_t i = 0; i < w.size(); ++i)
          EXPECT_NEAR(g[i], w[i], 1e-7 + 1e-6 * std::abs(w[i])) << name << " element " << i;
      }
  }
}

}  // namespace
}  // namespace ctp
