// Every CUDA compute kernel against its CPU kernel: the same one-op (or
// few-op) program runs on the CPU and on GPU 0 from the same inputs, and
// every output must agree (FP32 within a few ulps' worth of tolerance; the
// element-wise kernels bit for bit). FP16/BF16: the tolerance is stated per
// op where the kernels are compared.
#include "tests/gpu/kernels_vs_cpu_util.h"

namespace ctp {
namespace {

using gpu_testing::at;
using gpu_testing::expect_same;
using gpu_testing::labels;
using gpu_testing::Outcome;
using gpu_testing::random_fp32;
using gpu_testing::random_half;

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

// Operands broadcast only over leading dims (a bias, a same-shape operand, a
// scalar) take the 32-bit periodic kernel; a full operand beside one whose
// dims sit between broadcast ones (a channel bias at axis 1) the
// middle-broadcast kernel; the others the general one. All must give the
// CPU's results bit for bit.
TEST(GpuKernels, ElementwiseForwardBroadcastLayouts) {
  CTP_REQUIRE_GPUS(1);
  struct Case {
    std::vector<int64_t> x, y;
    int axis;
  };
  const std::vector<Case> cases = {
      {{64, 37}, {37}, 1},          // bias: period 37
      {{6, 5}, {6, 5}, -1},         // same shape
      {{2, 3, 4}, {3, 4}, 1},       // trailing two dims: period 12
      {{5, 3, 4}, {1}, -1},         // scalar
      {{3}, {4, 2, 3}, -1},         // X the smaller operand
      {{4, 3, 2}, {4, 1, 2}, -1},   // broadcast in the middle: general kernel
      {{3, 1, 5}, {3, 4, 5}, -1},   // X broadcast in the middle: general kernel
      // 16-byte packs: periods that are multiples of 8 (and of 4 only), tails.
      {{65, 64}, {64}, -1},
      {{33, 40}, {40}, 1},
      {{3, 8, 16}, {8, 16}, 1},
      {{1001}, {1001}, -1},
      // Middle broadcast: channel biases (inner 20: single elements for BF16;
      // inner 64: packs), X the broadcast one, no leading dims.
      {{2, 3, 4, 5}, {3}, 1},
      {{8, 16, 8, 8}, {16}, 1},
      {{3}, {2, 3, 4}, 1},
      {{2, 3, 4}, {2, 3}, 0},
  };
  int seed = 10;
  for (const char* type : {"elementwise_add", "elementwise_sub", "elementwise_mul"})
    for (DataType dt : {DataType::FP32, DataType::BF16})
      for (const Case& c : cases) {
        SCOPED_TRACE(std::string(type) + " " + std::string(to_string(dt)) + " x " +
                     testing::PrintToString(c.x) + " axis " + std::to_string(c.axis));
        const auto make = [&](std::vector<int64_t> shape) {
          return dt == DataType::FP32 ? random_fp32(std::move(shape), seed++)
                                      : random_half(dt, std::move(shape), seed++);
        };
        ProgramBuilder pb;
        pb.op(type).in("X", "x").in("Y", "y").out("Out", "out").attr("axis", c.axis);
        expect_same(pb.build(), {{"x", make(c.x)}, {"y", make(c.y)}}, {"out"}, 0, 0);
      }
}

// Broadcast gradients sum in the CPU's order of ops/common/sum_order.h (runs of 64,
// then the runs in order), bit for bit, on every GPU path: one thread per
// column up to 64 rows (64 rows: one run; 65: a run of one more), two passes
// through the workspace above (100, 129, 1000 and 4096 rows, partial runs,
// 9 to 1024 columns), the general kernel when a summed dim sits between kept
// ones ([3, 300, 4] into [3, 1, 4]: 300 terms in runs), and the dense kernel
// for the gradient with the output's layout (dx).
TEST(GpuKernels, BroadcastGradientsSumInTheCpusRunOrder) {
  CTP_REQUIRE_GPUS(1);
  struct Case {
    std::vector<int64_t> x, y;
    int axis;
  };
  for (const Case& c : {Case{{100, 37}, {37}, -1}, Case{{70, 3, 5}, {3, 5}, 1},
                        Case{{4, 25, 6}, {6}, -1}, Case{{33, 1, 8}, {1, 8}, -1},
                        Case{{1000, 37}, {37}, -1}, Case{{129, 70}, {70}, 1},
                        Case{{20, 30, 2, 5}, {2, 5}, 2}, Case{{4096, 1024}, {1024}, -1},
                        Case{{3, 300, 4}, {3, 1, 4}, -1}, Case{{64, 9}, {9}, -1},
                        Case{{65, 9}, {9}, -1}}) {
    for (const char* type : {"elementwise_add", "elementwise_sub", "elementwise_mul"}) {
      for (DataType dt : {DataType::FP32, DataType::FP16, DataType::BF16}) {
        SCOPED_TRACE(std::string(type) + " " + std::string(to_string(dt)) + " x " + testing::PrintToString(c.x));
        ProgramBuilder pb;
        pb.op(std::string(type) + "_grad").in("X", "x").in("Y", "y").in("Out@GRAD", "g")
            .out("X@GRAD", "dx").out("Y@GRAD", "dy").attr("axis", c.axis);
        const auto make = [&](std::vector<int64_t> shape, uint64_t seed) {
          return dt == DataType::FP32 ? random_fp32(std::move(shape), seed)
                                      : random_half(dt, std::move(shape), seed);
        };
        expect_same(pb.build(), {{"x", make(c.x, 21)}, {"y", make(c.y, 22)}, {"g", make(c.x, 23)}},
                    {"dx", "dy"}, 0, 0);
      }
    }
  }
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
  // Long sums: over leading rows (two passes on the GPU), over a trailing dim
  // (one thread per output), and of everything.
  pb.op("reduce_mean").in("X", "long").out("Out", "l0").attr("dim", std::vector<int32_t>{0});
  pb.op("reduce_mean").in("X", "long").out("Out", "l1").attr("dim", std::vector<int32_t>{1});
  pb.op("reduce_mean").in("X", "long").out("Out", "lall").attr("reduce_all", true);
  expect_same(pb.build(), {{"x", random_fp32({3, 4, 5}, 60)}, {"g1", random_fp32({3, 5}, 61)},
                           {"g02", random_fp32({1, 4, 1}, 62)}, {"long", random_fp32({700, 130}, 63)}},
              {"m1", "m02", "mall", "dx1", "dx02", "l0", "l1", "lall"}, 0, 0);
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

TEST(GpuKernels, SoftmaxAndGradOnAnyAxisAndIn16Bits) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("softmax").in("X", "x").out("Out", "y").attr("axis", 1);
  pb.op("softmax_grad").in("Out", "y").in("Out@GRAD", "g").out("X@GRAD", "dx").attr("axis", 1);
  Tensor x = random_fp32({3, 5, 2}, 30);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] *= 30.f;  // large inputs
  expect_same(pb.build(), {{"x", x}, {"g", random_fp32({3, 5, 2}, 31)}}, {"y", "dx"}, 1e-5, 1e-6);
  // The last axis: a warp per row, rows longer than a warp and not a multiple of it.
  ProgramBuilder last;
  last.op("softmax").in("X", "x").out("Out", "y");
  last.op("softmax_grad").in("Out", "y").in("Out@GRAD", "g").out("X@GRAD", "dx");
  Tensor rows = random_fp32({3, 37, 100}, 36);
  for (int64_t i = 0; i < rows.numel(); ++i) rows.data<float>()[i] *= 10.f;
  expect_same(last.build(), {{"x", rows}, {"g", random_fp32({3, 37, 100}, 37)}}, {"y", "dx"},
              1e-5, 1e-6);
  for (DataType half : {DataType::FP16, DataType::BF16}) {
    SCOPED_TRACE(std::string(to_string(half)));
    ProgramBuilder hb;  // computed in float both ways, rounded once: one 16-bit ulp at most
    hb.op("softmax").in("X", "x").out("Out", "y");
    hb.op("softmax_grad").in("Out", "y").in("Out@GRAD", "g").out("X@GRAD", "dx");
    expect_same(hb.build(), {{"x", random_half(half, {4, 7}, 32)},
                             {"g", random_half(half, {4, 7}, 33)}},
                {"y", "dx"}, 1e-2, 1e-3);
  }
}

TEST(GpuKernels, CrossEntropy2AndGrad) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("cross_entropy2").in("X", "x").in("Label", "label").out("Y", "y").out("XShape", "xs")
      .out("MatchX", "mx");
  pb.op("cross_entropy_grad2").in("Label", "label").in("MatchX", "mx").in("XShape", "xs")
      .in("Y@GRAD", "dy").out("X@GRAD", "dx");
  Tensor x = random_fp32({5, 4}, 34);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::abs(x.data<float>()[i]) + 0.05f;
  x.data<float>()[6] = 0;  // row 1's labelled probability: log(0) is -1e20 on both
  expect_same(pb.build(), {{"x", x}, {"label", labels({0, 2, 1, -100, 3})},
                           {"dy", random_fp32({5, 1}, 35)}},
              {"y", "xs", "mx", "dx"}, 1e-6, 1e-7);
  // A label outside the classes is an error naming the op, as on the CPU.
  ProgramBuilder bad;
  bad.op("cross_entropy2").in("X", "x").in("Label", "label").out("Y", "y").out("XShape", "xs")
      .out("MatchX", "mx");
  const gpu_testing::GpuRank gpu(0);
  Scope scope;
  scope.var("x") = random_fp32({2, 4}, 36);
  scope.var("label") = labels({1, 4});
  const Program program = bad.build();
  try {
    Executor(program, gpu.services).run(scope);
    FAIL() << "label 4 of 4 classes must be rejected";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "block 0, op 0 'cross_entropy2': Label 4 at row 1 is outside [0, 4)");
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

TEST(GpuKernels, AdamWAndRmspropOverSeveralSteps) {
  CTP_REQUIRE_GPUS(1);
  Tensor lr(DataType::FP32, {1});
  lr.data<float>()[0] = 0.05f;
  Tensor pow1(DataType::FP32, {1}), pow2(DataType::FP32, {1});
  pow1.data<float>()[0] = 0.9f;
  pow2.data<float>()[0] = 0.999f;
  ProgramBuilder pb;
  pb.op("adamw").in("Param", "p_adamw").in("Grad", "g").in("Moment1", "m1").in("Moment2", "m2")
      .in("LearningRate", "lr").in("Beta1Pow", "b1p").in("Beta2Pow", "b2p")
      .out("ParamOut", "p_adamw").out("Moment1Out", "m1").out("Moment2Out", "m2")
      .out("Beta1PowOut", "b1p").out("Beta2PowOut", "b2p")
      .attr("coeff", 0.1f).attr("lr_ratio", 0.5f).attr("with_decay", true);
  for (bool centered : {false, true}) {
    const std::string k = centered ? "_c" : "";
    pb.op("rmsprop").in("Param", "p_rms" + k).in("Grad", "g").in("MeanSquare", "ms" + k)
        .in("Moment", "mom" + k).in("MeanGrad", "mg" + k).in("LearningRate", "lr")
        .out("ParamOut", "p_rms" + k).out("MeanSquareOut", "ms" + k).out("MomentOut", "mom" + k)
        .out("MeanGradOut", "mg" + k).attr("momentum", 0.5f).attr("centered", centered)
        .attr("epsilon", 1e-6f);
  }
  Tensor zeros(DataType::FP32, {4, 9});
  expect_same(pb.build(),
              {{"p_adamw", random_fp32({4, 9}, 40)}, {"p_rms", random_fp32({4, 9}, 41)},
               {"p_rms_c", random_fp32({4, 9}, 42)}, {"g", random_fp32({4, 9}, 43)},
               {"m1", zeros}, {"m2", zeros}, {"ms", zeros}, {"mom", zeros}, {"mg", zeros},
               {"ms_c", zeros}, {"mom_c", zeros}, {"mg_c", zeros}, {"lr", lr}, {"b1p", pow1},
               {"b2p", pow2}},
              {"p_adamw", "m1", "m2", "b1p", "b2p", "p_rms", "ms", "mom", "p_rms_c", "ms_c",
               "mom_c", "mg_c"},
              1e-5, 1e-6, 3);
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

// FP16/BF16 (mixed precision). Every kernel computes in float and rounds each
// output once, as the CPU kernels do, so the element-wise kernels, relu,
// scale, sum, the broadcast gradients and reduce_mean agree bit for bit
// (tolerance 0). mean reduces in a tree where the CPU adds in order: one
// ulp of the output type (rtol 2^-10 for FP16, 2^-7 for BF16).
TEST(GpuKernels, HalfAndBfloat16ElementwiseActivationsSumsMeans) {
  CTP_REQUIRE_GPUS(1);
  for (DataType dt : {DataType::FP16, DataType::BF16}) {
    SCOPED_TRACE(std::string(to_string(dt)));
    const double ulp = dt == DataType::FP16 ? 0x1p-10 : 0x1p-7;
    for (const char* type : {"elementwise_add", "elementwise_sub", "elementwise_mul"}) {
      SCOPED_TRACE(type);
      ProgramBuilder pb;
      pb.op(type).in("X", "x").in("Y", "y").out("Out", "out").attr("axis", 1);
      pb.op(std::string(type) + "_grad").in("X", "x").in("Y", "y").in("Out@GRAD", "g")
          .out("X@GRAD", "dx").out("Y@GRAD", "dy").attr("axis", 1);
      expect_same(pb.build(), {{"x", random_half(dt, {2, 3, 4}, 1)}, {"y", random_half(dt, {3}, 2)},
                               {"g", random_half(dt, {2, 3, 4}, 3)}},
                  {"out", "dx", "dy"}, 0, 0);
    }
    ProgramBuilder pb;
    pb.op("relu").in("X", "x").out("Out", "r");
    pb.op("relu_grad").in("Out", "r").in("Out@GRAD", "g").out("X@GRAD", "dr");
    pb.op("scale").in("X", "x").out("Out", "s1").attr("scale", 0.3f).attr("bias", 2.f);
    pb.op("scale").in("X", "x").out("Out", "s2").attr("scale", -3.f).attr("bias", 1.f)
        .attr("bias_after_scale", false);
    pb.op("sum").in("X", std::vector<std::string>{"x", "g", "x"}).out("Out", "total");
    pb.op("sum").in("X", std::vector<std::string>{"acc", "g"}).out("Out", "acc");
    pb.op("mean_grad").in("X", "x").in("Out@GRAD", "one").out("X@GRAD", "dm");
    pb.op("reduce_mean").in("X", "x").out("Out", "rm").attr("dim", std::vector<int32_t>{1});
    pb.op("reduce_mean_grad").in("X", "x").in("Out@GRAD", "grm").out("X@GRAD", "drm")
        .attr("dim", std::vector<int32_t>{1});
    const std::map<std::string, Tensor> inputs = {
        {"x", random_half(dt, {7, 33}, 7, 1e-2)}, {"g", random_half(dt, {7, 33}, 8)},
        {"acc", random_half(dt, {7, 33}, 9)}, {"one", random_half(dt, {1}, 10)},
        {"grm", random_half(dt, {7}, 11)}};
    expect_same(pb.build(), inputs, {"r", "dr", "s1", "s2", "total", "acc", "dm", "rm", "drm"},
                0, 0);
    ProgramBuilder mean;
    mean.op("mean").in("X", "x").out("Out", "m");
    expect_same(mean.build(), {{"x", random_half(dt, {1000, 3}, 12)}}, {"m"}, ulp, 0);
  }
}

// GEMMs: cuBLAS (cublasGemmEx, FP32 compute) sums in its own order, and the
// gradient of a broadcast batch accumulates over cuBLAS calls in the output
// type where the CPU sums in float: 4 ulps of the output type, relative and
// absolute (inputs in [-1, 1), K <= 40).
TEST(GpuKernels, HalfAndBfloat16MulAndMatmulOnCublasWithGrads) {
  CTP_REQUIRE_GPUS(1);
  for (DataType dt : {DataType::FP16, DataType::BF16}) {
    SCOPED_TRACE(std::string(to_string(dt)));
    const double tol = 4 * (dt == DataType::FP16 ? 0x1p-10 : 0x1p-7);
    ProgramBuilder pb;
    pb.op("mul").in("X", "a").in("Y", "b").out("Out", "ab");
    pb.op("mul_grad").in("X", "a").in("Y", "b").in("Out@GRAD", "g_ab")
        .out("X@GRAD", "da").out("Y@GRAD", "db");
    pb.op("matmul_v2").in("X", "p").in("Y", "q").out("Out", "pq").attr("trans_x", true)
        .attr("trans_y", true);
    pb.op("matmul_v2_grad").in("X", "p").in("Y", "q").in("Out@GRAD", "g_pq")
        .out("X@GRAD", "dp").out("Y@GRAD", "dq").attr("trans_x", true).attr("trans_y", true);
    pb.op("matmul_v2").in("X", "u").in("Y", "v").out("Out", "uv");  // batch broadcast
    pb.op("matmul_v2_grad").in("X", "u").in("Y", "v").in("Out@GRAD", "g_uv")
        .out("X@GRAD", "du").out("Y@GRAD", "dv");
    expect_same(pb.build(),
                {{"a", random_half(dt, {6, 40}, 10)}, {"b", random_half(dt, {40, 8}, 11)},
                 {"g_ab", random_half(dt, {6, 8}, 12)}, {"p", random_half(dt, {3, 16, 7}, 14)},
                 {"q", random_half(dt, {3, 8, 16}, 15)}, {"g_pq", random_half(dt, {3, 7, 8}, 16)},
                 {"u", random_half(dt, {2, 1, 3, 8}, 17)}, {"v", random_half(dt, {3, 8, 5}, 18)},
                 {"g_uv", random_half(dt, {2, 3, 3, 5}, 19)}},
                {"ab", "da", "db", "pq", "dp", "dq", "uv", "du", "dv"}, tol, tol);
  }
}

// cast (bit for bit: both round float to nearest even once; FP64 passes
// through float on both), fill_constant and coalesce_tensor in 16 bits.
TEST(GpuKernels, CastFillConstantCoalesceTensorInHalfPrecision) {
  CTP_REQUIRE_GPUS(1);
  const auto cast = [](ProgramBuilder& pb, const std::string& x, const std::string& out,
                       DataType from, DataType to) {
    pb.op("cast").in("X", x).out("Out", out)
        .attr("in_dtype", static_cast<int32_t>(from)).attr("out_dtype", static_cast<int32_t>(to));
  };
  ProgramBuilder pb;
  cast(pb, "x", "x16", DataType::FP32, DataType::FP16);
  cast(pb, "x", "xb", DataType::FP32, DataType::BF16);
  cast(pb, "x16", "x16_32", DataType::FP16, DataType::FP32);
  cast(pb, "xb", "xb_64", DataType::BF16, DataType::FP64);
  cast(pb, "x16", "x16_b", DataType::FP16, DataType::BF16);
  cast(pb, "d", "d16", DataType::FP64, DataType::FP16);
  cast(pb, "x", "x_same", DataType::FP32, DataType::FP32);
  cast(pb, "label", "label32", DataType::INT64, DataType::FP32);  // on the host, uploaded
  pb.op("fill_constant").out("Out", "c16").attr("shape", std::vector<int64_t>{3, 2})
      .attr("value", 0.1f).attr("dtype", 4);
  pb.op("fill_constant").out("Out", "cb").attr("shape", std::vector<int64_t>{5})
      .attr("value", -7.3f).attr("dtype", 22);
  pb.op("coalesce_tensor").in("Input", std::vector<std::string>{"g0", "g1"})
      .out("Output", std::vector<std::string>{"g0", "g1"}).out("FusedOutput", "fused")
      .attr("copy_data", true).attr("dtype", 22);
  pb.op("scale").in("X", "g1").out("Out", "g1").attr("scale", 2.f);  // writes through a view
  pb.op("coalesce_tensor").in("Input", std::vector<std::string>{"h0", "h1"})
      .out("Output", std::vector<std::string>{"h0", "h1"}).out("FusedOutput", "hfused")
      .attr("set_constant", true).attr("constant", 0.5f).attr("dtype", 4);
  Tensor x = random_fp32({4, 33}, 60);
  x.data<float>()[0] = 1.0f + 1.0f / 2048;  // an FP16 tie
  x.data<float>()[1] = 70000.f;             // FP16 overflow: inf
  x.data<float>()[2] = 1.0f + 1.0f / 256;   // a BF16 tie
  const Tensor d = test::random_tensor({9}, 61);
  Outcome outcome;
  outcome.gpu_only = {"fused", "hfused"};
  expect_same(pb.build(),
              {{"x", x}, {"d", d}, {"label", labels({3, -1, 70000})},
               {"g0", random_half(DataType::BF16, {3}, 62)},
               {"g1", random_half(DataType::BF16, {70, 2}, 63)},
               {"h0", random_half(DataType::FP16, {5}, 64)},
               {"h1", random_half(DataType::FP16, {2, 2}, 65)}},
              {"x16", "xb", "x16_32", "xb_64", "x16_b", "d16", "x_same", "label32", "c16", "cb",
               "g0", "g1", "h0", "h1"},
              0, 0, 1, &outcome);
  // 256-byte chunks of 2-byte elements: 3 -> 128, 140 -> 256 elements.
  EXPECT_EQ(outcome.gpu_host.get("fused").shape(), (std::vector<int64_t>{384}));
  EXPECT_EQ(outcome.gpu_host.get("fused").dtype(), DataType::BF16);
  EXPECT_TRUE(std::isinf(at(outcome.gpu_host.get("x16"), 1)));
}

// Inputs of different float types stay errors naming the op and the dtypes.
TEST(GpuKernels, MixedPrecisionInputsAreErrorsNamingOpAndDtypes) {
  CTP_REQUIRE_GPUS(1);
  DeviceContext dc(0);
  RunServices s;
  s.device = dc.device();
  s.device_context = &dc;
  const auto error_of = [&](const std::string& type) {
    ProgramBuilder pb;
    pb.op(type).in("X", "x").in("Y", "y").out("Out", "out");
    const Program program = pb.build();
    Scope scope;
    scope.var("x") = random_half(DataType::FP16, {2, 2}, 70);
    scope.var("y") = random_fp32({2, 2}, 71);
    try {
      Executor(program, s).run(scope);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  for (const char* type : {"elementwise_add", "matmul_v2", "mul"}) {
    const std::string message = error_of(type);
    EXPECT_NE(message.find(std::string("'") + type + "'"), std::string::npos) << message;
    EXPECT_NE(message.find("input X 'x' has dtype FP16, but input Y 'y' has FP32"),
              std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace ctp
