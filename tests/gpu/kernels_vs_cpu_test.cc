// Every CUDA compute kernel against its CPU kernel: the same one-op (or
// few-op) program runs on the CPU and on GPU 0 from the same inputs, and
// every output must agree (FP32 within a few ulps' worth of tolerance; the
// element-wise kernels bit for bit).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "executor/cuda/device_context.h"
#include "program_ir/builder.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

Tensor random_fp32(std::vector<int64_t> shape, uint64_t seed, double gap = 0.0) {
  const Tensor d = test::random_tensor(shape, seed, gap);
  Tensor f(DataType::FP32, shape);
  for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = static_cast<float>(d.data<double>()[i]);
  return f;
}

Tensor labels(std::vector<int64_t> values) {
  Tensor t(DataType::INT64, {static_cast<int64_t>(values.size()), 1});
  for (std::size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
  return t;
}

double at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::FP32: return t.data<float>()[i];
    case DataType::FP64: return t.data<double>()[i];
    case DataType::INT32: return t.data<int32_t>()[i];
    case DataType::INT64: return static_cast<double>(t.data<int64_t>()[i]);
    default: ADD_FAILURE() << "unexpected dtype"; return 0;
  }
}

struct Outcome {
  std::vector<std::string> gpu_only;  // also copied to gpu_host, not compared
  Scope gpu_host;                     // the GPU scope's outputs copied to the host
  RunCounters gpu_counters;
};

// Runs `program` `steps` times on the CPU and on GPU 0 from the same inputs
// and compares `outputs` with |gpu - cpu| <= atol + rtol * |cpu|.
void expect_same(const Program& program, const std::map<std::string, Tensor>& inputs,
                 const std::vector<std::string>& outputs, double rtol = 1e-6, double atol = 1e-7,
                 int steps = 1, Outcome* outcome = nullptr) {
  Scope cpu, gpu;
  for (const auto& [name, t] : inputs) {
    Tensor c(t.dtype(), t.shape());
    std::memcpy(c.raw_data(), t.raw_data(), t.bytes());
    cpu.var(name) = c;
    Tensor g(t.dtype(), t.shape());
    std::memcpy(g.raw_data(), t.raw_data(), t.bytes());
    gpu.var(name) = g;
  }
  DeviceContext dc(0);
  RunServices cpu_services;
  RunServices gpu_services;
  gpu_services.device = dc.device();
  gpu_services.device_context = &dc;
  Executor cpu_run(program, cpu_services);
  Executor gpu_run(program, gpu_services);
  for (int s = 0; s < steps; ++s) {
    cpu_run.run(cpu);
    gpu_run.run(gpu);
  }
  dc.synchronize();
  for (const std::string& name : outputs) {
    SCOPED_TRACE("output " + name);
    const Tensor& c = cpu.get(name);
    const Tensor& g_dev = gpu.get(name);
    EXPECT_EQ(g_dev.device(), dc.device()) << "GPU kernels must leave their outputs on the GPU";
    const Tensor g = dc.to_host(g_dev);
    ASSERT_EQ(c.dtype(), g.dtype());
    ASSERT_EQ(c.shape(), g.shape());
    int reported = 0;
    for (int64_t i = 0; i < c.numel() && reported < 5; ++i) {
      const double want = at(c, i), got = at(g, i);
      if (!(std::abs(got - want) <= atol + rtol * std::abs(want))) {
        ADD_FAILURE() << "element " << i << ": GPU " << got << ", CPU " << want;
        ++reported;
      }
    }
    if (outcome) outcome->gpu_host.var(name) = g;
  }
  if (outcome) {
    outcome->gpu_counters = gpu_run.services().counters;
    for (const std::string& name : outcome->gpu_only)
      outcome->gpu_host.var(name) = dc.to_host(gpu.get(name));
  }
}

TEST(GpuKernels, ElementwiseWithAxisBroadcastAndGrads) {
  CTP_REQUIRE_GPUS(1);
  for (const char* type : {"elementwise_add", "elementwise_sub", "elementwise_mul"}) {
    SCOPED_TRACE(type);
    ProgramBuilder pb;
    pb.op(type).in("X", "x").in("Y", "y").out("Out", "out").attr("axis", 1);
    pb.op(std::string(type) + "_grad").in("X", "x").in("Y", "y").in("Out@GRAD", "g")
        .out("X@GRAD", "dx").out("Y@GRAD", "dy").attr("axis", 1);
    expect_same(pb.build(), {{"x", random_fp32({2, 3, 4}, 1)}, {"y", random_fp32({3}, 2)},
                             {"g", random_fp32({2, 3, 4}, 3)}},
                {"out", "dx", "dy"}, 0, 0);
  }
  // Trailing alignment (axis -1) with a [1, N] operand and Y of higher rank.
  ProgramBuilder pb;
  pb.op("elementwise_add").in("X", "x").in("Y", "y").out("Out", "out");
  pb.op("elementwise_add_grad").in("X", "x").in("Y", "y").in("Out@GRAD", "g")
      .out("X@GRAD", "dx").out("Y@GRAD", "dy");
  expect_same(pb.build(), {{"x", random_fp32({1, 5}, 4)}, {"y", random_fp32({3, 5}, 5)},
                           {"g", random_fp32({3, 5}, 6)}},
              {"out", "dx", "dy"}, 0, 0);
}

TEST(GpuKernels, ReluScaleSumMean) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("relu").in("X", "x").out("Out", "r");
  pb.op("relu_grad").in("Out", "r").in("Out@GRAD", "g").out("X@GRAD", "dr");
  pb.op("scale").in("X", "x").out("Out", "s1").attr("scale", 0.5f).attr("bias", 2.f);
  pb.op("scale").in("X", "x").out("Out", "s2").attr("scale", -3.f).attr("bias", 1.f)
      .attr("bias_after_scale", false);
  pb.op("sum").in("X", std::vector<std::string>{"x", "g", "x"}).out("Out", "total");
  pb.op("sum").in("X", std::vector<std::string>{"acc", "g"}).out("Out", "acc");  // in-place accumulation
  pb.op("mean").in("X", "x").out("Out", "m");
  pb.op("mean_grad").in("X", "x").in("Out@GRAD", "one").out("X@GRAD", "dm");
  Tensor one(DataType::FP32, {1});
  one.data<float>()[0] = 0.75f;
  expect_same(pb.build(), {{"x", random_fp32({7, 33}, 7, 1e-3)}, {"g", random_fp32({7, 33}, 8)},
                           {"acc", random_fp32({7, 33}, 9)}, {"one", one}},
              {"r", "dr", "s1", "s2", "total", "acc", "m", "dm"}, 1e-6, 1e-7);
}

TEST(GpuKernels, ReduceMeanOverDimsAndItsGrad) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("reduce_mean").in("X", "x").out("Out", "m1").attr("dim", std::vector<int32_t>{1});
  pb.op("reduce_mean").in("X", "x").out("Out", "m02").attr("dim", std::vector<int32_t>{0, -1})
      .attr("keep_dim", true);
  pb.op("reduce_mean").in("X", "x").out("Out", "mall").attr("reduce_all", true);
  pb.op("reduce_mean_grad").in("X", "x").in("Out@GRAD", "g1").out("X@GRAD", "dx1")
      .attr("dim", std::vector<int32_t>{1});
  pb.op("reduce_mean_grad").in("X", "x").in("Out@GRAD", "g02").out("X@GRAD", "dx02")
      .attr("dim", std::vector<int32_t>{0, -1}).attr("keep_dim", true);
  expect_same(pb.build(), {{"x", random_fp32({3, 4, 5}, 60)}, {"g1", random_fp32({3, 5}, 61)},
                           {"g02", random_fp32({1, 4, 1}, 62)}},
              {"m1", "m02", "mall", "dx1", "dx02"}, 0, 0);
}

TEST(GpuKernels, MulAndMatmulOnCublasWithGrads) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("mul").in("X", "a").in("Y", "b").out("Out", "ab");
  pb.op("mul_grad").in("X", "a").in("Y", "b").in("Out@GRAD", "g_ab")
      .out("X@GRAD", "da").out("Y@GRAD", "db");
  pb.op("mul").in("X", "a3").in("Y", "b").out("Out", "a3b").attr("x_num_col_dims", 2);
  pb.op("matmul_v2").in("X", "p").in("Y", "q").out("Out", "pq").attr("trans_x", true)
      .attr("trans_y", true);
  pb.op("matmul_v2_grad").in("X", "p").in("Y", "q").in("Out@GRAD", "g_pq")
      .out("X@GRAD", "dp").out("Y@GRAD", "dq").attr("trans_x", true).attr("trans_y", true);
  pb.op("matmul_v2").in("X", "u").in("Y", "v").out("Out", "uv");  // batch broadcast
  pb.op("matmul_v2_grad").in("X", "u").in("Y", "v").in("Out@GRAD", "g_uv")
      .out("X@GRAD", "du").out("Y@GRAD", "dv");
  expect_same(pb.build(),
              {{"a", random_fp32({6, 5}, 10)}, {"b", random_fp32({5, 4}, 11)},
               {"g_ab", random_fp32({6, 4}, 12)}, {"a3", random_fp32({2, 3, 5}, 13)},
               {"p", random_fp32({3, 2, 7}, 14)}, {"q", random_fp32({3, 4, 2}, 15)},
               {"g_pq", random_fp32({3, 7, 4}, 16)}, {"u", random_fp32({2, 1, 3, 4}, 17)},
               {"v", random_fp32({3, 4, 5}, 18)}, {"g_uv", random_fp32({2, 3, 3, 5}, 19)}},
              {"ab", "da", "db", "a3b", "pq", "dp", "dq", "uv", "du", "dv"}, 1e-5, 1e-6);
}

TEST(GpuKernels, SoftmaxWithCrossEntropyHardAndSoft) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("softmax_with_cross_entropy").in("Logits", "x").in("Label", "label")
      .out("Softmax", "sm").out("Loss", "loss");
  pb.op("softmax_with_cross_entropy_grad").in("Softmax", "sm").in("Label", "label")
      .in("Loss@GRAD", "gl").out("Logits@GRAD", "dx");
  pb.op("softmax_with_cross_entropy").in("Logits", "x").in("Label", "soft")
      .out("Softmax", "sm2").out("Loss", "loss2").attr("soft_label", true);
  Tensor x = random_fp32({5, 4}, 20);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] *= 30.f;  // large logits
  Tensor soft = random_fp32({5, 4}, 21);
  for (int64_t i = 0; i < soft.numel(); ++i) soft.data<float>()[i] = std::abs(soft.data<float>()[i]);
  expect_same(pb.build(), {{"x", x}, {"label", labels({0, 3, 1, -100, 2})},
                           {"gl", random_fp32({5, 1}, 22)}, {"soft", soft}},
              {"sm", "loss", "dx", "sm2", "loss2"}, 1e-5, 1e-6);
  // A label outside the classes is an error naming the op, as on the CPU.
  ProgramBuilder bad;
  bad.op("softmax_with_cross_entropy").in("Logits", "x").in("Label", "label")
      .out("Softmax", "sm").out("Loss", "loss");
  DeviceContext dc(0);
  RunServices s;
  s.device = dc.device();
  s.device_context = &dc;
  Scope scope;
  scope.var("x") = random_fp32({2, 4}, 23);
  scope.var("label") = labels({1, 4});
  const Program program = bad.build();
  try {
    Executor(program, s).run(scope);
    FAIL() << "label 4 of 4 classes must be rejected";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Label 4 at row 1"), std::string::npos) << e.what();
  }
}

TEST(GpuKernels, OptimizersOverSeveralSteps) {
  CTP_REQUIRE_GPUS(1);
  Tensor lr(DataType::FP32, {1});
  lr.data<float>()[0] = 0.05f;
  Tensor pow1(DataType::FP32, {1}), pow2(DataType::FP32, {1});
  pow1.data<float>()[0] = 0.9f;
  pow2.data<float>()[0] = 0.999f;
  ProgramBuilder pb;
  pb.op("sgd").in("Param", "p_sgd").in("Grad", "g").in("LearningRate", "lr")
      .out("ParamOut", "p_sgd");
  pb.op("momentum").in("Param", "p_mom").in("Grad", "g").in("Velocity", "v")
      .in("LearningRate", "lr").out("ParamOut", "p_mom").out("VelocityOut", "v")
      .attr("mu", 0.9f).attr("use_nesterov", true);
  pb.op("adam").in("Param", "p_adam").in("Grad", "g").in("Moment1", "m1").in("Moment2", "m2")
      .in("LearningRate", "lr").in("Beta1Pow", "b1p").in("Beta2Pow", "b2p")
      .out("ParamOut", "p_adam").out("Moment1Out", "m1").out("Moment2Out", "m2")
      .out("Beta1PowOut", "b1p").out("Beta2PowOut", "b2p");
  Tensor zeros(DataType::FP32, {4, 9});
  expect_same(pb.build(),
              {{"p_sgd", random_fp32({4, 9}, 30)}, {"p_mom", random_fp32({4, 9}, 31)},
               {"p_adam", random_fp32({4, 9}, 32)}, {"g", random_fp32({4, 9}, 33)},
               {"v", zeros}, {"m1", zeros}, {"m2", zeros}, {"lr", lr}, {"b1p", pow1},
               {"b2p", pow2}},
              {"p_sgd", "p_mom", "v", "p_adam", "m1", "m2", "b1p", "b2p"}, 1e-5, 1e-6, 3);
}

TEST(GpuKernels, InitializersSplitConcatAssign) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("fill_constant").out("Out", "c").attr("shape", std::vector<int64_t>{3, 2})
      .attr("value", 1.5f).attr("dtype", 5);
  pb.op("fill_constant").out("Out", "ci").attr("shape", std::vector<int64_t>{4})
      .attr("value", 7.f).attr("dtype", 3);
  pb.op("uniform_random").out("Out", "u").attr("shape", std::vector<int64_t>{50, 3})
      .attr("seed", 9).attr("min", -0.5f).attr("max", 0.5f);
  pb.op("gaussian_random").out("Out", "n").attr("shape", std::vector<int64_t>{31})
      .attr("seed", 10);
  pb.op("assign").in("X", "x").out("Out", "x_copy");
  pb.op("split").in("X", "x").out("Out", std::vector<std::string>{"s0", "s1", "s2"}).attr("axis", 1)
      .attr("sections", std::vector<int32_t>{1, -1, 2});
  pb.op("concat").in("X", std::vector<std::string>{"s2", "x", "s0"}).out("Out", "joined").attr("axis", 1);
  expect_same(pb.build(), {{"x", random_fp32({3, 6, 2}, 40)}},
              {"c", "ci", "u", "n", "x_copy", "s0", "s1", "s2", "joined"}, 0, 0);
}

TEST(GpuKernels, CoalesceTensorMakesAlignedViewsAndStopsCopying) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("coalesce_tensor").in("Input", std::vector<std::string>{"g0", "g1", "g2"}).out("Output", std::vector<std::string>{"g0", "g1", "g2"})
      .out("FusedOutput", "fused").attr("copy_data", true).attr("dtype", 5);
  pb.op("scale").in("X", "g1").out("Out", "g1").attr("scale", 2.f);  // writes through a view
  Outcome outcome;
  outcome.gpu_only = {"fused"};  // the CPU aligns to 64 bytes, the GPU to 256
  expect_same(pb.build(), {{"g0", random_fp32({3}, 50)}, {"g1", random_fp32({70, 2}, 51)},
                           {"g2", random_fp32({5}, 52)}},
              {"g0", "g1", "g2"}, 0, 0, 3, &outcome);
  // 256-byte chunks: 3 floats -> 64, 140 floats -> 192, 5 floats -> 64 elements.
  EXPECT_EQ(outcome.gpu_host.get("fused").shape(), (std::vector<int64_t>{320}));
  EXPECT_EQ(outcome.gpu_counters.coalesce_layouts, 1u) << "later steps reuse the layout";
  EXPECT_EQ(outcome.gpu_counters.coalesce_bytes_copied, (3u + 140u + 5u) * 4u)
      << "only the first step copies: later the grads already live in the fused buffer";
}

}  // namespace
}  // namespace ctp
