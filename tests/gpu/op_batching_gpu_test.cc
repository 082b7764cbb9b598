// Runs of independent casts, scales and sgd, momentum and Adam updates go to
// one multi-tensor launch per kind of task (executor/op_batching.h, ops/cuda/batch_launch.h): the
// results must be the bits of the ops run one by one, across launches of
// many tasks, sizes that leave tails and chunks, misaligned views, mixed
// dtypes and learning rates, and tasks that share memory through views.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "executor/executor.h"
#include "executor/runtime/float16.h"
#include "ops/cuda/batch_launch.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::make_op;

// Task k reads `a` (and `b`) and writes `out`, each `bytes` long.
cuda::TaskBytes task(const char* a, const char* b, const char* out, std::size_t bytes = 64) {
  cuda::TaskBytes t;
  t.reads(a, bytes).reads(b, b ? bytes : 0).writes(out, bytes);
  return t;
}

TEST(BatchLaunch, TasksThatShareMemoryAreFound) {  // host only: runs without a GPU
  alignas(16) static char memory[4096];
  const char* m = memory;
  // Disjoint tasks, each writing over its own input (in place): no sharing.
  EXPECT_FALSE(cuda::tasks_share_memory({task(m, m + 64, m), task(m + 128, m + 192, m + 128)}));
  // Two tasks reading the same bytes share nothing that is written.
  EXPECT_FALSE(cuda::tasks_share_memory({task(m, nullptr, m + 256), task(m, nullptr, m + 512)}));
  // One task writes what another reads, or part of what another writes.
  EXPECT_TRUE(cuda::tasks_share_memory({task(m, nullptr, m + 256), task(m + 300, nullptr, m + 1024, 8)}));
  EXPECT_TRUE(cuda::tasks_share_memory({task(m, nullptr, m + 256), task(m + 512, nullptr, m + 316, 8)}));
  // Touching ends are not overlaps; empty operands are ignored.
  EXPECT_FALSE(cuda::tasks_share_memory({task(m, nullptr, m + 64), task(m + 128, nullptr, m + 192)}));
  cuda::TaskBytes empty_write;
  empty_write.reads(m + 1024, 64).writes(m, 0);
  EXPECT_FALSE(cuda::tasks_share_memory({task(m, nullptr, m + 64), empty_write}));
}

// Host values with a spread of magnitudes and signs.
Tensor wave(DataType dtype, int64_t n, float phase) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = 3.0 * std::sin(0.7 * double(i) + phase) * std::exp(0.01 * double(i % 97));
  Tensor t = test::tensor<double>({n}, v);
  if (dtype == DataType::FP64) return t;
  Tensor out(DataType::FP32, {n});
  for (int64_t i = 0; i < n; ++i) out.data<float>()[i] = static_cast<float>(v[static_cast<std::size_t>(i)]);
  return out;
}

Op cast_op(const std::string& x, const std::string& out, DataType from, DataType to) {
  return make_op("cast", {{"X", {x}}}, {{"Out", {out}}},
                 {{"in_dtype", Attribute(static_cast<int32_t>(from))},
                  {"out_dtype", Attribute(static_cast<int32_t>(to))}});
}

Op sgd_op(const std::string& param, const std::string& grad, const std::string& lr) {
  return make_op("sgd", {{"Param", {param}}, {"Grad", {grad}}, {"LearningRate", {lr}}},
                 {{"ParamOut", {param}}});
}

const int64_t kSizes[] = {1, 7, 64, 1000, 1024, 16383, 16384, 16385, 70001, 3};

// 130 FP32 casts to BF16 and FP16 and 20 FP64 casts to FP32 (one run, three
// kinds, two launches for the first kind); then each 16-bit copy cast back
// (a second run: it reads the first); then 120 FP32 and 10 FP64 updates with
// two learning rates; then the 16-bit copies scaled with six factor, bias
// and order combinations.
// `host` on the GPU one element past an aligned address: no 16-byte pack
// fits it, so its task takes the one-element path.
Tensor misaligned_on(DeviceContext& device, const Tensor& host) {
  Tensor padded(host.dtype(), {host.numel() + 1});
  const std::size_t elem = element_size(host.dtype());
  std::memcpy(static_cast<char*>(padded.raw_data()) + elem, host.raw_data(), host.bytes());
  const Tensor on_gpu = device.to_device(padded);
  return Tensor::view(on_gpu.buffer(), on_gpu.offset() + elem, host.dtype(), host.shape());
}

Program many_small_ops(DeviceContext& device, Scope& scope) {
  Program p = Program::with_global_block();
  Block& b = p.global_block();
  scope.var("lr") = test::tensor<float>({1}, {0.25f});
  scope.var("lr_small") = test::tensor<float>({1}, {1.0f / 3});
  scope.var("lr64") = test::tensor<double>({1}, {0.125});
  for (int k = 0; k < 150; ++k) {
    const int64_t n = kSizes[k % 10] + k / 10;
    const bool fp64 = k >= 130;
    scope.var("x" + std::to_string(k)) = wave(fp64 ? DataType::FP64 : DataType::FP32, n, 0.1f * k);
    if (k % 10 == 8)
      scope.var("x" + std::to_string(k)) = misaligned_on(device, scope.var("x" + std::to_string(k)));
    const DataType to = fp64 ? DataType::FP32 : (k % 3 ? DataType::BF16 : DataType::FP16);
    b.append_op(cast_op("x" + std::to_string(k), "h" + std::to_string(k),
                        fp64 ? DataType::FP64 : DataType::FP32, to));
  }
  for (int k = 0; k < 130; ++k)
    b.append_op(cast_op("h" + std::to_string(k), "f" + std::to_string(k),
                        k % 3 ? DataType::BF16 : DataType::FP16, DataType::FP32));
  for (int k = 0; k < 130; ++k) {
    const int64_t n = kSizes[k % 10] + k / 10;
    const bool fp64 = k >= 120;
    const DataType dt = fp64 ? DataType::FP64 : DataType::FP32;
    scope.var("p" + std::to_string(k)) = wave(dt, n, 1.0f + k);
    scope.var("g" + std::to_string(k)) = wave(dt, n, 2.0f - k);
    if (k % 10 == 9) scope.var("p" + std::to_string(k)) = misaligned_on(device, wave(dt, n, 1.0f + k));
    b.append_op(sgd_op("p" + std::to_string(k), "g" + std::to_string(k),
                       fp64 ? "lr64" : (k % 2 ? "lr" : "lr_small")));
  }
  // 40 momentum updates (plain and Nesterov) and 40 Adam updates, each
  // parameter with its own beta powers (advanced in place), 8 of them with
  // use_global_beta_pow (not advanced).
  for (int k = 0; k < 80; ++k) {
    const int64_t n = kSizes[k % 10] + k;
    const std::string id = std::to_string(k);
    for (const char* state : {"q", "gq", "m1_", "m2_"})
      scope.var(state + id) = wave(DataType::FP32, n, 0.5f * k + static_cast<float>(state[0]));
    if (k < 40) {
      b.append_op(make_op("momentum",
                          {{"Param", {"q" + id}}, {"Grad", {"gq" + id}}, {"Velocity", {"m1_" + id}},
                           {"LearningRate", {k % 2 ? "lr" : "lr_small"}}},
                          {{"ParamOut", {"q" + id}}, {"VelocityOut", {"m1_" + id}}},
                          {{"mu", Attribute(0.9f)}, {"use_nesterov", Attribute(k % 4 == 1)}}));
      continue;
    }
    scope.var("b1_" + id) = test::tensor<float>({1}, {0.9f});
    scope.var("b2_" + id) = test::tensor<float>({1}, {0.999f});
    scope.var("m2_" + id) = wave(DataType::FP32, n, 0.1f * k);
    Tensor& m2 = scope.var("m2_" + id);  // second moments are not negative
    for (int64_t i = 0; i < n; ++i) m2.data<float>()[i] = std::abs(m2.data<float>()[i]);
    b.append_op(make_op(
        "adam",
        {{"Param", {"q" + id}}, {"Grad", {"gq" + id}}, {"LearningRate", {"lr_small"}},
         {"Moment1", {"m1_" + id}}, {"Moment2", {"m2_" + id}}, {"Beta1Pow", {"b1_" + id}},
         {"Beta2Pow", {"b2_" + id}}},
        {{"ParamOut", {"q" + id}}, {"Moment1Out", {"m1_" + id}}, {"Moment2Out", {"m2_" + id}},
         {"Beta1PowOut", {"b1_" + id}}, {"Beta2PowOut", {"b2_" + id}}},
        {{"beta1", Attribute(0.9f)}, {"beta2", Attribute(0.999f)}, {"epsilon", Attribute(1e-8f)},
         {"use_global_beta_pow", Attribute(k >= 72)}}));
  }
  const float factors[] = {0.5f, 1.0f / 1024, 3.0f};
  for (int k = 0; k < 130; ++k)
    b.append_op(make_op("scale", {{"X", {"h" + std::to_string(k)}}},
                        {{"Out", {"s" + std::to_string(k)}}},
                        {{"scale", Attribute(factors[k % 3])},
                         {"bias", Attribute(k % 2 ? 0.25f : 0.0f)},
                         {"bias_after_scale", Attribute(k % 4 < 2)}}));
  return p;
}

std::vector<unsigned char> bytes_of(DeviceContext& device, const Tensor& t) {
  const Tensor host = t.device().kind == DeviceKind::CPU ? t : device.to_host(t);
  const auto* p = static_cast<const unsigned char*>(host.raw_data());
  return std::vector<unsigned char>(p, p + host.bytes());
}

TEST(GpuOpBatching, BatchedCastsAndUpdatesGiveTheBitsOfOpsRunAlone) {
  CTP_REQUIRE_GPUS(1);
  DeviceContext device(0);
  Scope batched_scope, alone_scope;
  const Program program = many_small_ops(device, batched_scope);
  many_small_ops(device, alone_scope);
  RunServices services;
  services.device = device.device();
  services.device_context = &device;
  Executor batched(program, services);
  services.batch_ops = false;
  Executor alone(program, services);
  // The casts back to float wait (op_batching.h's gathering) until the
  // scales read their inputs: after the updates, which share no var with them.
  ASSERT_EQ(batched.batched_runs().size(), 6u);
  EXPECT_EQ(batched.batched_runs()[0].count, 150u);
  EXPECT_EQ(batched.batched_runs()[1].count, 130u);
  EXPECT_EQ(batched.batched_runs()[2].count, 40u);
  EXPECT_EQ(batched.batched_runs()[3].count, 40u);
  EXPECT_EQ(batched.batched_runs()[4].count, 130u);
  EXPECT_EQ(batched.batched_runs()[5].count, 130u);
  EXPECT_TRUE(alone.batched_runs().empty());
  for (int step = 0; step < 2; ++step) {  // the second step reuses every output buffer
    batched.run(batched_scope);
    alone.run(alone_scope);
  }
  device.synchronize();
  struct Outputs {
    const char* prefix;
    int first, end;
  };
  for (const Outputs& o : {Outputs{"h", 0, 150}, Outputs{"f", 0, 130}, Outputs{"p", 0, 130},
                           Outputs{"s", 0, 130}, Outputs{"q", 0, 80}, Outputs{"m1_", 0, 80},
                           Outputs{"m2_", 40, 80}, Outputs{"b1_", 40, 80}, Outputs{"b2_", 40, 80}})
    for (int k = o.first; k < o.end; ++k) {
      const std::string name = o.prefix + std::to_string(k);
      EXPECT_EQ(bytes_of(device, batched_scope.var(name)), bytes_of(device, alone_scope.var(name)))
          << name;
    }
  // The updates moved the parameters (the comparison is not of inputs).
  EXPECT_NE(bytes_of(device, batched_scope.var("p5")),
            bytes_of(device, wave(DataType::FP32, kSizes[5], 6.0f)));
}

// Casts that are independent by name but not by memory: the first reads a
// view of what the second writes, so it must read the old values, as when
// they run one by one. (Batched by dtype pair, the second's pair would
// launch first.)
TEST(GpuOpBatching, TasksSharingMemoryThroughViewsKeepTheirOrder) {
  CTP_REQUIRE_GPUS(1);
  DeviceContext device(0);
  constexpr int64_t n = 4096;
  const Tensor source = wave(DataType::FP32, n, 0.3f);
  const Tensor before = wave(DataType::FP32, n, 2.1f);
  Tensor before_bf16(DataType::BF16, {n});
  for (int64_t i = 0; i < n; ++i)
    static_cast<uint16_t*>(before_bf16.raw_data())[i] = bfloat16::from_float(before.data<float>()[i]);
  const Tensor shared = device.to_device(before_bf16);
  Scope scope;
  scope.var("reader_in") = Tensor::view(shared.buffer(), shared.offset(), DataType::BF16, {n});
  scope.var("writer_in") = device.to_device(source);
  scope.var("writer_out") = shared;
  Program p = Program::with_global_block();
  p.global_block().append_op(cast_op("reader_in", "reader_out", DataType::BF16, DataType::FP32));
  p.global_block().append_op(cast_op("writer_in", "writer_out", DataType::FP32, DataType::BF16));
  RunServices services;
  services.device = device.device();
  services.device_context = &device;
  Executor executor(p, services);
  ASSERT_EQ(executor.batched_runs().size(), 1u);
  executor.run(scope);
  const Tensor read = device.to_host(scope.var("reader_out"));
  const Tensor written = device.to_host(scope.var("writer_out"));
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t old_bits = static_cast<const uint16_t*>(before_bf16.raw_data())[i];
    ASSERT_EQ(read.data<float>()[i], bfloat16::to_float(old_bits)) << "element " << i;
    ASSERT_EQ(static_cast<const uint16_t*>(written.raw_data())[i],
              bfloat16::from_float(source.data<float>()[i])) << "element " << i;
  }
  EXPECT_TRUE(scope.var("writer_out").shares_buffer_with(shared));
}

}  // namespace
}  // namespace ctp
