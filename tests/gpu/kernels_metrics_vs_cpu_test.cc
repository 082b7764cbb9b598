// The CUDA kernels of top_k, top_k_v2 (and their gradients) and accuracy
// against their CPU kernels (tests/gpu/kernels_vs_cpu_util.h). Both pick in
// the order of ops/common/top_k_order.h, so values, indices, gradients and
// counts agree exactly, ties and NaN included.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "program_ir/builder.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kernels_vs_cpu_util.h"

namespace ctp {
namespace {

using gpu_testing::expect_same;
using gpu_testing::random_fp32;

// Values in tenths, so many rows hold ties; with_nan: a few NaNs.
Tensor tied_fp32(std::vector<int64_t> shape, uint64_t seed, bool with_nan) {
  Tensor t = random_fp32(std::move(shape), seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    float& v = t.data<float>()[i];
    v = with_nan && i % 37 == 5 ? std::numeric_limits<float>::quiet_NaN()
                                : std::round(v * 10.0f) / 10.0f;
  }
  return t;
}

TEST(GpuKernels, TopKAndGradExactlyAsOnTheCpu) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("top_k").in("X", "x").out("Out", "v1").out("Indices", "i1").attr("k", int32_t{5});
  pb.op("top_k_grad").in("X", "x").in("Indices", "i1").in("Out@GRAD", "v1").out("X@GRAD", "d1")
      .attr("k", int32_t{5});
  pb.op("top_k").in("X", "x").in("K", "k").out("Out", "vk").out("Indices", "ik");
  pb.op("top_k_v2").in("X", "x").out("Out", "v2").out("Indices", "i2").attr("k", int32_t{3})
      .attr("axis", int32_t{0}).attr("largest", false);
  pb.op("top_k_v2_grad").in("X", "x").in("Indices", "i2").in("Out@GRAD", "v2").out("X@GRAD", "d2")
      .attr("k", int32_t{3}).attr("axis", int32_t{0}).attr("largest", false);
  const Program program = pb.build();
  Tensor k(DataType::INT32, {1});
  k.data<int32_t>()[0] = 7;
  const std::vector<std::string> outputs = {"v1", "i1", "d1", "vk", "ik", "v2", "i2", "d2"};
  expect_same(program, {{"x", tied_fp32({64, 40}, 90, false)}, {"k", k}}, outputs, 0, 0);
  // With NaNs (which never compare equal) the indices show the same picks.
  expect_same(program, {{"x", tied_fp32({64, 40}, 91, true)}, {"k", k}}, {"i1", "ik", "i2"}, 0,
              0);
  expect_same(program, {{"x", test::random_tensor({64, 40}, 92)}, {"k", k}}, outputs, 0, 0);
}

TEST(GpuKernels, TopKOnIntegersExactlyAsOnTheCpu) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("top_k_v2").in("X", "x").out("Out", "v").out("Indices", "i").attr("k", int32_t{4})
      .attr("axis", int32_t{1});
  const Program program = pb.build();
  Tensor x(DataType::INT64, {6, 9, 5});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<int64_t>()[i] = (i * 7919) % 13 - 6;
  expect_same(program, {{"x", x}}, {"v", "i"}, 0, 0);
}

TEST(GpuKernels, AccuracyExactlyAsOnTheCpu) {
  CTP_REQUIRE_GPUS(1);
  ProgramBuilder pb;
  pb.op("top_k").in("X", "x").out("Out", "v").out("Indices", "i").attr("k", int32_t{2});
  pb.op("accuracy").in("Out", "v").in("Indices", "i").in("Label", "label")
      .out("Accuracy", "acc").out("Correct", "correct").out("Total", "total");
  const Program program = pb.build();
  std::vector<int64_t> labels;
  for (int64_t r = 0; r < 300; ++r) labels.push_back((r * 31) % 10);
  expect_same(program, {{"x", random_fp32({300, 10}, 93)}, {"label", gpu_testing::labels(labels)}},
              {"acc", "correct", "total"}, 0, 0);
}

}  // namespace
}  // namespace ctp
