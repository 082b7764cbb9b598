// The CPU kernels of batch_norm (training, is_test, use_global_stats; NCHW and
// NHWC) against values worked out by hand, and batch_norm_grad against finite
// differences. Shape and attribute errors are in op_rule_cases_cv.h.
#include <gtest/gtest.h>

#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::check_gradient;
using test::make_op;
using test::random_tensor;
using test::run_op;
using test::tensor;
using test::values;

const std::vector<Slot> kInputs = {{"X", {"x"}},       {"Scale", {"scale"}},
                                   {"Bias", {"bias"}}, {"Mean", {"mean"}},
                                   {"Variance", {"var"}}};
// MeanOut and VarianceOut in place, as Paddle's programs write them.
const std::vector<Slot> kOutputs = {{"Y", {"y"}},
                                    {"MeanOut", {"mean"}},
                                    {"VarianceOut", {"var"}},
                                    {"SavedMean", {"saved_mean"}},
                                    {"SavedVariance", {"saved_var"}},
                                    {"ReserveSpace", {"reserve"}}};

// x is [2, 2] (N = 2, C = 2): channel 0 holds 1, 3 (mean 2, variance 1),
// channel 1 holds 2, 6 (mean 4, variance 4).
Scope two_channels(std::vector<double> mean, std::vector<double> var) {
  Scope s;
  s.var("x") = tensor<double>({2, 2}, {1, 2, 3, 6});
  s.var("scale") = tensor<double>({2}, {1, 2});
  s.var("bias") = tensor<double>({2}, {0, 1});
  s.var("mean") = tensor<double>({2}, std::move(mean));
  s.var("var") = tensor<double>({2}, std::move(var));
  return s;
}

TEST(KernelsBatchNorm, TrainingUsesTheBatchAndMovesTheRunningStatistics) {
  Scope s = two_channels({0, 0}, {1, 1});
  run_op(s, make_op("batch_norm", kInputs, kOutputs,
                    {{"epsilon", Attribute(0.0f)}, {"momentum", Attribute(0.9f)}}));
  // (x - mean) / std * scale + bias, std 1 and 2.
  EXPECT_EQ(values<double>(s.get("y")), (std::vector<double>{-1, -1, 1, 3}));
  EXPECT_EQ(values<double>(s.get("saved_mean")), (std::vector<double>{2, 4}));
  EXPECT_EQ(values<double>(s.get("saved_var")), (std::vector<double>{1, 0.5}));  // 1 / std
  // running * 0.9 + batch * 0.1, with the biased batch variance.
  const double m = static_cast<double>(0.9f);
  test::expect_near(values<double>(s.get("mean")), {2 * (1 - m), 4 * (1 - m)}, 1e-15);
  test::expect_near(values<double>(s.get("var")), {m + 1 - m, m + 4 * (1 - m)}, 1e-15);
  EXPECT_EQ(s.get("reserve").numel(), 0);
}

TEST(KernelsBatchNorm, IsTestAndGlobalStatsUseMeanAndVariance) {
  for (const char* flag : {"is_test", "use_global_stats"}) {
    SCOPED_TRACE(flag);
    Scope s = two_channels({1, 1}, {4, 1});
    run_op(s, make_op("batch_norm", kInputs, kOutputs,
                      {{"epsilon", Attribute(0.0f)}, {flag, Attribute(true)}}));
    EXPECT_EQ(values<double>(s.get("y")), (std::vector<double>{0, 3, 1, 11}));
    EXPECT_EQ(values<double>(s.get("mean")), (std::vector<double>{1, 1}));  // unchanged
    EXPECT_EQ(values<double>(s.get("var")), (std::vector<double>{4, 1}));
  }
}

TEST(KernelsBatchNorm, NhwcReadsTheChannelsLast) {
  Scope s;
  // [1, 2, 2] NHWC: channel 0 holds 1, 3; channel 1 holds 2, 6 (as above).
  s.var("x") = tensor<double>({1, 2, 2}, {1, 2, 3, 6});
  s.var("scale") = tensor<double>({2}, {1, 2});
  s.var("bias") = tensor<double>({2}, {0, 1});
  s.var("mean") = tensor<double>({2}, {0, 0});
  s.var("var") = tensor<double>({2}, {1, 1});
  run_op(s, make_op("batch_norm", kInputs, kOutputs,
                    {{"epsilon", Attribute(0.0f)}, {"data_layout", Attribute("NHWC")}}));
  EXPECT_EQ(values<double>(s.get("y")), (std::vector<double>{-1, -1, 1, 3}));
}

void check_batch_norm_gradient(Shape x_shape, int64_t channels,
                               std::vector<NamedAttribute> attrs, uint64_t seed) {
  Tensor var = random_tensor({channels}, seed + 4);
  for (int64_t i = 0; i < channels; ++i) var.data<double>()[i] += 1.5;  // positive
  check_gradient({.type = "batch_norm",
                  .inputs = {{"X", random_tensor(std::move(x_shape), seed)},
                             {"Scale", random_tensor({channels}, seed + 1)},
                             {"Bias", random_tensor({channels}, seed + 2)},
                             {"Mean", random_tensor({channels}, seed + 3)},
                             {"Variance", var}},
                  .outputs = {"Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"},
                  .objective = "Y",
                  .wrt = {"X", "Scale", "Bias"},
                  .attrs = std::move(attrs)});
}

TEST(KernelsBatchNormGrad, TrainingNchwAndNhwc) {
  check_batch_norm_gradient({3, 2, 2, 3}, 2, {}, 81);
  check_batch_norm_gradient({2, 3, 2, 4}, 4, {{"data_layout", Attribute("NHWC")}}, 82);
}

TEST(KernelsBatchNormGrad, GlobalStats) {
  check_batch_norm_gradient({3, 2, 2, 2}, 2, {{"use_global_stats", Attribute(true)}}, 83);
}

}  // namespace
}  // namespace ctp
