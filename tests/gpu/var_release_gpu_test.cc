// On a GPU: an executor that frees intermediates after their last use
// (executor/var_release.h) gives the bits of one that keeps them, holds less
// device memory at its peak, and reuses freed memory from the stream-ordered
// pool (executor/cuda/cuda_buffer.cc) step after step; it frees the elements
// of vars that later ops read only for their shape early, and the CUDA
// kernels of those ops need no elements.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "executor/executor.h"
#include "executor/runtime/memory_stats.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/kernels_test_util.h"
#include "tests/shape_only_cases.h"

namespace ctp {
namespace {

constexpr int64_t kMiB = 1 << 20;

// One GPU, and runs of a program with dead vars freed or kept.
class GpuVarRelease : public ::testing::Test {
 protected:
  void SetUp() override {
    CTP_REQUIRE_GPUS(1);
    device_.emplace(0);
    services_.device = device_->device();
    services_.device_context = &*device_;
  }

  struct Measured {
    std::vector<float> values;  // the FP32 var `result` after the last step
    int64_t peak_bytes = 0;     // device memory held at most over the measured steps
  };

  // Runs `program` once (its first step fills the memory pool), then
  // `measured_steps` more, on `x` uploaded as var "x".
  Measured run(const Program& program, const Tensor& x, const std::string& result,
               bool release, int measured_steps, const std::string& freed_var = "") {
    Scope scope;
    scope.var("x") = device_->to_device(x);
    Executor executor(program, services_);
    executor.set_release_dead_vars(release);
    executor.keep_vars({result});
    executor.run(scope);
    device_->synchronize();
    reset_peak_memory(DeviceKind::CUDA);
    const int64_t before = memory_stats(DeviceKind::CUDA).current_bytes;
    for (int step = 0; step < measured_steps; ++step) executor.run(scope);
    device_->synchronize();
    if (!freed_var.empty()) {
      const Tensor* t = scope.find(freed_var);
      EXPECT_EQ(t && t->initialized(), !release) << freed_var;
    }
    return {test::values<float>(device_->to_host(scope.get(result))),
            memory_stats(DeviceKind::CUDA).peak_bytes - before};
  }

  std::optional<DeviceContext> device_;
  RunServices services_;
};

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

TEST_F(GpuVarRelease, FreedIntermediatesGiveTheSameBitsWithLessMemory) {
  const Program program = scale_chain();
  const Tensor x = test::random_tensor({1024, 1024}, 7);  // FP64 on the host
  Tensor x32(DataType::FP32, {1024, 1024});
  for (int64_t i = 0; i < x32.numel(); ++i) x32.data<float>()[i] = static_cast<float>(x.data<double>()[i]);
  const Measured kept = run(program, x32, "loss", false, 3, "t5");
  const Measured freed = run(program, x32, "loss", true, 3, "t5");
  EXPECT_EQ(kept.values, freed.values);
  EXPECT_LE(kept.peak_bytes, kMiB);  // kept: every buffer made in step 1, reused since
  EXPECT_GE(freed.peak_bytes, 4 * kMiB);  // freed: made again each step, two at a time
  EXPECT_LE(freed.peak_bytes, 8 * kMiB + kMiB);
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

TEST_F(GpuVarRelease, ShapeOnlyReadsLetElementsGoEarlyWithTheSameBits) {
  const Program program = shape_read_chain();
  const Tensor x = test::random_fp32({1024, 1024}, 7);
  const Measured kept = run(program, x, "g", false, 1);
  const Measured freed = run(program, x, "g", true, 1);
  EXPECT_EQ(kept.values, freed.values);
  // Freed: at most 3 of the 4 MiB tensors at once (a, b, c at the add; c, dc
  // then; dc, da, db at the grad). Holding a and b to the grad would be 5.
  EXPECT_GE(freed.peak_bytes, 3 * 4 * kMiB);
  EXPECT_LE(freed.peak_bytes, 3 * 4 * kMiB + kMiB);
}

// The CUDA kernel of every op that declares shape-only inputs gives the CPU
// kernel's results when those inputs have no elements.
TEST_F(GpuVarRelease, ShapeOnlyInputsNeedNoElementsInCudaKernels) {
  DeviceContext& device = *device_;
  for (const auto& [type, c] : test::shape_only_cases()) {
    SCOPED_TRACE(type);
    const OpDef* schema = OpRegistry::global().find(type);
    ASSERT_NE(schema, nullptr);
    Scope on_cpu, on_gpu;
    for (const Slot& slot : c.op.inputs())
      for (const std::string& name : slot.args) {
        const Tensor& t = c.inputs.at(name);
        on_cpu.var(name) = t;
        on_gpu.var(name) = schema->reads_only_shape_of(slot.name)
                               ? Tensor::without_elements(t.dtype(), t.shape())
                               : device.to_device(t);
      }
    test::run_op(on_cpu, c.op);
    test::run_op(on_gpu, c.op, services_);
    device.synchronize();
    for (const Slot& slot : c.op.outputs())
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
