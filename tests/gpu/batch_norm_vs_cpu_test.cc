// The CUDA kernels of batch_norm and batch_norm_grad (ops/cuda/
// batch_norm_kernels.cu) against the CPU kernels (kernels_vs_cpu_util.h), two
// steps each (the running statistics move in place, MeanOut = Mean), in
// training, is_test and use_global_stats, for FP32, FP64, FP16 and BF16 X.
// The shapes reach every path of the GPU kernels: planes whose width is not a
// multiple of the 16-byte pack (so packs hold two channels' elements), odd
// channel counts, planes narrower than a pack, a channel's sums split over
// blocks of unequal planes, NHWC and rank 2, 3 and 5.
//
// Tolerances, |gpu - cpu| <= atol + rtol * |cpu|: the GPU's per-channel sums
// are tree sums, the CPU's sequential, so FP32 outputs agree to rtol 1e-4
// (atol 1e-4), FP64 to 1e-9; 16-bit Y and X@GRAD to one or two 16-bit ulps
// (rtol and atol 1e-2), their FP32 statistics and gradients as FP32's.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/schema/shape_rules.h"
#include "program_ir/builder.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kernels_vs_cpu_util.h"

namespace ctp {
namespace {

using namespace gpu_testing;  // random_fp32, random_half, expect_same (kernels_vs_cpu_util.h)

enum class Mode { Training, IsTest, GlobalStats };

struct BatchNormCase {
  const char* layout;
  Shape x;
  double offset = 0;  // added to X: a mean far from zero beside a small variance
};

const char* name_of(Mode mode) {
  switch (mode) {
    case Mode::Training: return "training";
    case Mode::IsTest: return "is_test";
    default: return "use_global_stats";
  }
}

Program batch_norm_program(const char* layout, Mode mode, bool with_dx) {
  ProgramBuilder pb;
  OpBuilder fwd = pb.op("batch_norm").in("X", "x").in("Scale", "scale").in("Bias", "bias")
                  .in("Mean", "mean").in("Variance", "var").out("Y", "y")
                  .out("MeanOut", "mean").out("VarianceOut", "var")
                  .out("SavedMean", "saved_mean").out("SavedVariance", "saved_var");
  OpBuilder grad = pb.op("batch_norm_grad").in("X", "x").in("Scale", "scale")
                   .in("Bias", "bias").in("Mean", "mean").in("Variance", "var")
                   .in("SavedMean", "saved_mean").in("SavedVariance", "saved_var")
                   .in("Y@GRAD", "g").out("Scale@GRAD", "dscale").out("Bias@GRAD", "dbias");
  if (with_dx) grad.out("X@GRAD", "dx");
  for (auto* op : {&fwd, &grad}) {
    op->attr("data_layout", Attribute(layout));
    op->attr("is_test", Attribute(mode == Mode::IsTest));
    op->attr("use_global_stats", Attribute(mode == Mode::GlobalStats));
  }
  return pb.build();
}

// Random X (plus c.offset) and Y@GRAD of `dtype`, scale, bias, mean and
// variance (at least 0.5) in the statistics' dtype.
std::map<std::string, Tensor> batch_norm_inputs(const BatchNormCase& c, DataType dtype,
                                                uint64_t seed) {
  const std::size_t axis = std::string(c.layout) == "NHWC" ? c.x.size() - 1 : 1;
  const Shape channels = {c.x[axis]};
  const auto random = [&](DataType t, const Shape& shape, uint64_t s, double add) {
    if (t == DataType::FP16 || t == DataType::BF16) return random_half(t, shape, s);
    Tensor v = t == DataType::FP64 ? test::random_tensor(shape, s) : random_fp32(shape, s);
    for (int64_t i = 0; i < v.numel(); ++i) {
      if (t == DataType::FP64) v.data<double>()[i] += add;
      else v.data<float>()[i] += static_cast<float>(add);
    }
    return v;
  };
  const DataType stats = dtype == DataType::FP64 ? DataType::FP64 : DataType::FP32;
  return {{"x", random(dtype, c.x, seed, c.offset)},
          {"g", random(dtype, c.x, seed + 1, 0)},
          {"scale", random(stats, channels, seed + 2, 0)},
          {"bias", random(stats, channels, seed + 3, 0)},
          {"mean", random(stats, channels, seed + 4, 0)},
          {"var", random(stats, channels, seed + 5, 1.5)}};
}

void expect_batch_norm_same(const BatchNormCase& c, Mode mode, DataType dtype, uint64_t seed,
                            bool with_dx = true) {
  SCOPED_TRACE(std::string(c.layout) + " " + shape_to_string(c.x) + " " + name_of(mode) + " " +
               std::string(to_string(dtype)) + (with_dx ? "" : " without X@GRAD"));
  const Program program = batch_norm_program(c.layout, mode, with_dx);
  const std::map<std::string, Tensor> inputs = batch_norm_inputs(c, dtype, seed);
  const std::vector<std::string> stats = {"mean", "var", "saved_mean", "saved_var", "dscale",
                                          "dbias"};
  std::vector<std::string> elements = {"y"};
  if (with_dx) elements.push_back("dx");
  const int steps = 2;
  if (dtype == DataType::FP64) {
    expect_same(program, inputs, stats, 1e-9, 1e-9, steps);
    expect_same(program, inputs, elements, 1e-9, 1e-9, steps);
  } else {
    expect_same(program, inputs, stats, 1e-4, 1e-4, steps);
    const bool half = dtype == DataType::FP16 || dtype == DataType::BF16;
    expect_same(program, inputs, elements, half ? 1e-2 : 1e-4, half ? 1e-2 : 1e-4, steps);
  }
}

const std::vector<BatchNormCase>& cases() {
  static const std::vector<BatchNormCase> all = {
      {"NCHW", {4, 3, 5, 6}},      // planes of 30: packs hold two channels
      {"NCHW", {3, 5, 7, 7}},      // planes of 49, 5 channels
      {"NCHW", {8, 7, 14, 14}},    // planes of 196: a multiple of 4, not of 8
      {"NCHW", {6, 5, 2, 3}},      // planes of 6: narrower than a 16-bit pack
      {"NCHW", {16, 3, 64, 64}},   // each channel's sums over 8 blocks
      {"NCHW", {512, 3, 7, 7}},    // 3 blocks a channel, 170 or 171 planes each
      {"AnyLayout", {37, 11}},     // rank 2: [N, C]
      {"NCHW", {5, 4, 33}},        // rank 3
      {"NCHW", {2, 3, 4, 5, 3}},   // rank 5
      {"NHWC", {4, 5, 6, 3}},
      {"NHWC", {3, 7, 7, 5}},
      {"NHWC", {8, 64, 64, 3}},    // single elements over several blocks a channel
  };
  return all;
}

TEST(GpuBatchNorm, EveryLayoutAndModeInFp32AndFp64) {
  CTP_REQUIRE_GPUS(1);
  uint64_t seed = 300;
  for (const BatchNormCase& c : cases())
    for (Mode mode : {Mode::Training, Mode::IsTest, Mode::GlobalStats})
      for (DataType dtype : {DataType::FP32, DataType::FP64})
        expect_batch_norm_same(c, mode, dtype, seed += 10);
}

TEST(GpuBatchNorm, EveryLayoutAndModeIn16Bits) {
  CTP_REQUIRE_GPUS(1);
  uint64_t seed = 700;
  for (const BatchNormCase& c : cases())
    for (Mode mode : {Mode::Training, Mode::IsTest, Mode::GlobalStats})
      for (DataType dtype : {DataType::FP16, DataType::BF16})
        expect_batch_norm_same(c, mode, dtype, seed += 10);
}

// FP32 X with a mean near 100 beside a variance near 1/3: E[x^2] - E[x]^2
// from plain sums would lose ~1e-3 of the variance to cancellation. The GPU's
// saved mean and 1 / std agree with the statistics computed in double to 1e-5
// (and with the CPU's, whose sequential FP32 sums are the less exact).
TEST(GpuBatchNorm, StatisticsOfAMeanFarFromZeroDoNotCancel) {
  CTP_REQUIRE_GPUS(1);
  const BatchNormCase c{"NCHW", {16, 3, 30, 30}, 100.0};
  const std::map<std::string, Tensor> inputs = batch_norm_inputs(c, DataType::FP32, 900);
  Outcome outcome;
  expect_same(batch_norm_program(c.layout, Mode::Training, true), inputs,
              {"saved_mean", "saved_var"}, 1e-4, 1e-4, 1, &outcome);
  const Tensor& x = inputs.at("x");
  const int64_t channels = c.x[1], inner = c.x[2] * c.x[3], count = c.x[0] * inner;
  for (int64_t ch = 0; ch < channels; ++ch) {
    double sum = 0, squares = 0;
    for (int64_t o = 0; o < c.x[0]; ++o)
      for (int64_t i = 0; i < inner; ++i) sum += x.data<float>()[(o * channels + ch) * inner + i];
    const double mean = sum / static_cast<double>(count);
    for (int64_t o = 0; o < c.x[0]; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const double d = x.data<float>()[(o * channels + ch) * inner + i] - mean;
        squares += d * d;
      }
    const double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(count) + 1e-5);
    EXPECT_NEAR(outcome.gpu_host.get("saved_mean").data<float>()[ch], mean, 1e-5 * mean);
    EXPECT_NEAR(outcome.gpu_host.get("saved_var").data<float>()[ch], inv_std, 1e-5 * inv_std);
  }
}

// Scale@GRAD and Bias@GRAD without X@GRAD (a frozen input).
TEST(GpuBatchNorm, GradWithoutInputGrad) {
  CTP_REQUIRE_GPUS(1);
  expect_batch_norm_same({"NCHW", {3, 5, 7, 7}}, Mode::Training, DataType::BF16, 950, false);
  expect_batch_norm_same({"NCHW", {3, 5, 7, 7}}, Mode::Training, DataType::FP32, 960, false);
}

}  // namespace
}  // namespace ctp
