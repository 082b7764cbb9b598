// The CPU kernels of layer_norm, lookup_table_v2 and reduce_sum against
// values worked out by hand, their run-time errors, and their gradients
// against finite differences. Their shape errors are cases of
// op_rule_cases.h.
#include <gmock/gmock.h>

#include <cmath>

#include "executor/runtime/float16.h"
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::check_gradient;
using test::make_op;
using test::random_tensor;
using test::run_op;
using test::tensor;
using test::values;
using Shape = std::vector<int64_t>;

TEST(KernelsLayerNorm, RowsNormalisedScaledAndShifted) {
  Scope s;
  // Rows (1, 3): mean 2, variance 1, and (4, 8): mean 6, variance 4; both
  // normalise to (-1, 1), then * (2, 10) + (0.5, -1).
  s.var("x") = tensor<double>({2, 2}, {1, 3, 4, 8});
  s.var("scale") = tensor<double>({2}, {2, 10});
  s.var("bias") = tensor<double>({2}, {0.5, -1});
  run_op(s, make_op("layer_norm", {{"X", {"x"}}, {"Scale", {"scale"}}, {"Bias", {"bias"}}},
                    {{"Y", {"y"}}, {"Mean", {"mean"}}, {"Variance", {"var"}}},
                    {{"epsilon", Attribute(0.0f)}}));
  EXPECT_EQ(values<double>(s.get("mean")), (std::vector<double>{2, 6}));
  EXPECT_EQ(values<double>(s.get("var")), (std::vector<double>{1, 4}));
  test::expect_near(values<double>(s.get("y")), {-1.5, 9, -1.5, 9}, 1e-15);
  // Without Scale and Bias, rank 3 at begin_norm_axis 2, default epsilon 1e-5.
  s.var("x3") = tensor<double>({1, 2, 2}, {0, 2, 4, 4});
  run_op(s, make_op("layer_norm", {{"X", {"x3"}}}, {{"Y", {"y3"}}, {"Mean", {"m3"}},
                                                    {"Variance", {"v3"}}},
                    {{"begin_norm_axis", Attribute(int32_t{2})}}));
  EXPECT_EQ(s.get("m3").shape(), (Shape{2}));
  const double r = 1 / std::sqrt(1 + 1e-5);
  test::expect_near(values<double>(s.get("y3")), {-r, r, 0, 0}, 1e-7);
}

TEST(KernelsLayerNorm, Fp16InputKeepsFp32Statistics) {
  Scope s;
  Tensor x(DataType::FP16, {1, 2});
  x.data<uint16_t>()[0] = float16::from_float(1.0f);
  x.data<uint16_t>()[1] = float16::from_float(3.0f);
  s.var("x") = x;
  s.var("scale") = tensor<float>({2}, {1, 1});
  run_op(s, make_op("layer_norm", {{"X", {"x"}}, {"Scale", {"scale"}}},
                    {{"Y", {"y"}}, {"Mean", {"mean"}}, {"Variance", {"var"}}},
                    {{"epsilon", Attribute(0.0f)}}));
  EXPECT_EQ(s.get("y").dtype(), DataType::FP16);
  EXPECT_EQ(s.get("mean").dtype(), DataType::FP32);
  EXPECT_EQ(values<float>(s.get("mean")), (std::vector<float>{2}));
  EXPECT_EQ(float16::to_float(s.get("y").data<uint16_t>()[1]), 1.0f);
}

TEST(KernelsLayerNormGrad, AgainstFiniteDifferences) {
  const std::vector<std::string> outputs = {"Y", "Mean", "Variance"};
  check_gradient({.type = "layer_norm",
                  .inputs = {{"X", random_tensor({3, 2, 4}, 71)},
                             {"Scale", random_tensor({8}, 72)},
                             {"Bias", random_tensor({8}, 73)}},
                  .outputs = outputs, .objective = "Y", .wrt = {"X", "Scale", "Bias"},
                  .tolerance = 1e-5});
  check_gradient({.type = "layer_norm", .inputs = {{"X", random_tensor({2, 3, 4}, 74)}},
                  .outputs = outputs, .objective = "Y",
                  .attrs = {{"begin_norm_axis", Attribute(int32_t{2})}}, .tolerance = 1e-5});
}

TEST(KernelsLookupTable, RowsPaddingAndInt32Ids) {
  Scope s;
  s.var("w") = tensor<float>({3, 2}, {0, 1, 10, 11, 20, 21});
  s.var("ids") = tensor<int64_t>({2, 2}, {2, 0, 1, 2});
  run_op(s, make_op("lookup_table_v2", {{"W", {"w"}}, {"Ids", {"ids"}}}, {{"Out", {"out"}}},
                    {{"padding_idx", Attribute(int64_t{1})}}));
  EXPECT_EQ(s.get("out").shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(values<float>(s.get("out")), (std::vector<float>{20, 21, 0, 1, 0, 0, 20, 21}));
  s.var("ids32") = tensor<int32_t>({3}, {1, 1, 0});
  run_op(s, make_op("lookup_table_v2", {{"W", {"w"}}, {"Ids", {"ids32"}}}, {{"Out", {"o32"}}}));
  EXPECT_EQ(values<float>(s.get("o32")), (std::vector<float>{10, 11, 10, 11, 0, 1}));
  // The gradient adds each id's row (twice for id 2) and none for padding.
  s.var("g") = tensor<float>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  run_op(s, make_op("lookup_table_v2_grad", {{"W", {"w"}}, {"Ids", {"ids"}}, {"Out@GRAD", {"g"}}},
                    {{"W@GRAD", {"dw"}}}, {{"padding_idx", Attribute(int64_t{1})}}));
  EXPECT_EQ(values<float>(s.get("dw")), (std::vector<float>{3, 4, 0, 0, 8, 10}));
}

TEST(KernelsLookupTable, IdOutsideTheTableNamesTheOp) {
  Scope s;
  s.var("w") = tensor<float>({3, 2}, {0, 1, 10, 11, 20, 21});
  s.var("ids") = tensor<int64_t>({2}, {0, 3});
  try {
    run_op(s, make_op("lookup_table_v2", {{"W", {"w"}}, {"Ids", {"ids"}}}, {{"Out", {"out"}}}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "block 0, op 0 'lookup_table_v2': Ids 3 at position 1 is outside [0, 3)");
  }
}

TEST(KernelsLookupTableGrad, AgainstFiniteDifferences) {
  check_gradient({.type = "lookup_table_v2",
                  .inputs = {{"W", random_tensor({4, 3}, 75)},
                             {"Ids", tensor<int64_t>({5}, {3, 0, 3, 2, 0})}},
                  .wrt = {"W"}, .attrs = {{"padding_idx", Attribute(int64_t{2})}}});
}

TEST(KernelsReduceSum, DimsKeepDimAndAll) {
  Scope s;
  s.var("x") = tensor<double>({2, 3}, {0, 1, 2, 3, 4, 5});
  run_op(s, make_op("reduce_sum", {{"X", {"x"}}}, {{"Out", {"rows"}}},
                    {{"dim", Attribute(std::vector<int32_t>{1})}, {"keep_dim", Attribute(true)}}));
  EXPECT_EQ(s.get("rows").shape(), (Shape{2, 1}));
  EXPECT_EQ(values<double>(s.get("rows")), (std::vector<double>{3, 12}));
  run_op(s, make_op("reduce_sum", {{"X", {"x"}}}, {{"Out", {"all"}}},
                    {{"reduce_all", Attribute(true)}}));
  EXPECT_EQ(values<double>(s.get("all")), (std::vector<double>{15}));
  s.var("g") = tensor<double>({2, 1}, {1, -2});
  run_op(s, make_op("reduce_sum_grad", {{"X", {"x"}}, {"Out@GRAD", {"g"}}}, {{"X@GRAD", {"dx"}}},
                    {{"dim", Attribute(std::vector<int32_t>{1})}, {"keep_dim", Attribute(true)}}));
  EXPECT_EQ(values<double>(s.get("dx")), (std::vector<double>{1, 1, 1, -2, -2, -2}));
}

TEST(KernelsReduceSumGrad, AgainstFiniteDifferences) {
  check_gradient({.type = "reduce_sum", .inputs = {{"X", random_tensor({2, 3, 4}, 76)}},
                  .attrs = {{"dim", Attribute(std::vector<int32_t>{0, -1})}}});
}

}  // namespace
}  // namespace ctp
