// Math kernels against hand-computed values.
#include <cmath>
#include <string>
#include <vector>

#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::make_op;
using test::run_op;
using test::tensor;
using test::values;

TEST(KernelsMath, MulFlattensByNumColDims) {
  Scope s;
  // X [1, 2, 2] with x_num_col_dims 2 is [[1, 2], [3, 4]]; Y [2, 1].
  s.var("x") = tensor<float>({1, 2, 2}, {1, 2, 3, 4});
  s.var("y") = tensor<float>({2, 1}, {10, 100});
  run_op(s, make_op("mul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}},
                    {{"x_num_col_dims", Attribute(int32_t{2})}}));
  EXPECT_EQ(s.get("out").shape(), (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(values<float>(s.get("out")), (std::vector<float>{210, 430}));
}

TEST(KernelsMath, MulRejectsMismatchedInnerDims) {
  Scope s;
  s.var("x") = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  s.var("y") = tensor<float>({2, 2}, {1, 2, 3, 4});
  try {
    run_op(s, make_op("mul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("op 0 'mul'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  }
}

TEST(KernelsMath, MatmulV2TransposesAndBatches) {
  Scope s;
  // X^T where X = [[1, 3], [2, 4]] stored transposed: X^T = [[1, 2], [3, 4]].
  s.var("x") = tensor<double>({2, 2}, {1, 3, 2, 4});
  s.var("y") = tensor<double>({2, 2, 2}, {1, 0, 0, 1, 0, 1, 1, 0});  // identity, swap
  run_op(s, make_op("matmul_v2", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}},
                    {{"trans_x", Attribute(true)}}));
  EXPECT_EQ(s.get("out").shape(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(values<double>(s.get("out")), (std::vector<double>{1, 2, 3, 4, 2, 1, 4, 3}));
}

TEST(KernelsMath, MatmulV2VectorOperandsDropTheirDim) {
  Scope s;
  s.var("v") = tensor<float>({2}, {1, 2});
  s.var("m") = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  run_op(s, make_op("matmul_v2", {{"X", {"v"}}, {"Y", {"m"}}}, {{"Out", {"out"}}}));
  EXPECT_EQ(s.get("out").shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(values<float>(s.get("out")), (std::vector<float>{9, 12, 15}));
  s.var("w") = tensor<float>({3}, {1, 0, -1});
  run_op(s, make_op("matmul_v2", {{"X", {"m"}}, {"Y", {"w"}}}, {{"Out", {"out2"}}}));
  EXPECT_EQ(s.get("out2").shape(), (std::vector<int64_t>{2}));
  EXPECT_EQ(values<float>(s.get("out2")), (std::vector<float>{-2, -2}));
}

TEST(KernelsMath, ElementwiseBroadcastByAxis) {
  Scope s;
  s.var("x") = tensor<float>({2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  s.var("y") = tensor<float>({3}, {100, 200, 300});
  run_op(s, make_op("elementwise_add", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"add"}}},
                    {{"axis", Attribute(int32_t{1})}}));
  EXPECT_EQ(values<float>(s.get("add")),
            (std::vector<float>{100, 101, 202, 203, 304, 305, 106, 107, 208, 209, 310, 311}));
  s.var("row") = tensor<float>({2}, {1, -1});
  run_op(s, make_op("elementwise_mul", {{"X", {"x"}}, {"Y", {"row"}}}, {{"Out", {"mul"}}}));
  EXPECT_EQ(values<float>(s.get("mul")),
            (std::vector<float>{0, -1, 2, -3, 4, -5, 6, -7, 8, -9, 10, -11}));
  s.var("first") = tensor<float>({2}, {10, 20});
  run_op(s, make_op("elementwise_sub", {{"X", {"x"}}, {"Y", {"first"}}}, {{"Out", {"sub"}}},
                    {{"axis", Attribute(int32_t{0})}}));
  EXPECT_EQ(values<float>(s.get("sub")),
            (std::vector<float>{-10, -9, -8, -7, -6, -5, -14, -13, -12, -11, -10, -9}));
}

TEST(KernelsMath, ElementwiseTwoWayBroadcastAndInPlace) {
  Scope s;
  s.var("col") = tensor<double>({2, 1}, {1, 2});
  s.var("row") = tensor<double>({1, 3}, {10, 20, 30});
  run_op(s, make_op("elementwise_add", {{"X", {"col"}}, {"Y", {"row"}}}, {{"Out", {"col"}}}));
  EXPECT_EQ(s.get("col").shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<double>(s.get("col")), (std::vector<double>{11, 21, 31, 12, 22, 32}));
}

TEST(KernelsMath, ElementwiseRejectsIncompatibleShapes) {
  Scope s;
  s.var("x") = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  s.var("y") = tensor<float>({2}, {1, 2});
  EXPECT_THROW(run_op(s, make_op("elementwise_add", {{"X", {"x"}}, {"Y", {"y"}}},
                                 {{"Out", {"o"}}})),
               Error);
}

TEST(KernelsMath, ElementwiseGradReducesBroadcastDims) {
  Scope s;
  s.var("x") = tensor<float>({2, 2}, {1, 2, 3, 4});
  s.var("y") = tensor<float>({2}, {5, 6});
  s.var("g") = tensor<float>({2, 2}, {1, 10, 100, 1000});
  run_op(s, make_op("elementwise_sub_grad", {{"X", {"x"}}, {"Y", {"y"}}, {"Out@GRAD", {"g"}}},
                    {{"X@GRAD", {"dx"}}, {"Y@GRAD", {"dy"}}}));
  EXPECT_EQ(values<float>(s.get("dx")), (std::vector<float>{1, 10, 100, 1000}));
  EXPECT_EQ(values<float>(s.get("dy")), (std::vector<float>{-101, -1010}));
  run_op(s, make_op("elementwise_mul_grad", {{"X", {"x"}}, {"Y", {"y"}}, {"Out@GRAD", {"g"}}},
                    {{"Y@GRAD", {"dy2"}}}));
  EXPECT_EQ(values<float>(s.get("dy2")), (std::vector<float>{1 + 300, 20 + 4000}));
  EXPECT_FALSE(s.has("dx2"));
}

// ops/common/sum_order.h: a gradient's contributions are added in runs of 64, the
// run sums in order. 2^24 + 1 rounds back to 2^24 in float, so a plain
// left-to-right sum of 2^24 and 129 ones stays 2^24; in runs the ones of
// the second and third runs (64 and 2) survive.
TEST(KernelsMath, LongGradientSumsAddRunsOf64InOrder) {
  constexpr int64_t kRows = 130;
  std::vector<float> g(2 * kRows, 1.0f);
  g[0] = 16777216.0f;  // 2^24, column 0 of row 0
  Scope s;
  s.var("x") = tensor<float>({kRows, 2}, std::vector<float>(2 * kRows, 1.0f));
  s.var("y") = tensor<float>({2}, {0, 0});
  s.var("g") = tensor<float>({kRows, 2}, g);
  for (const char* type : {"elementwise_add_grad", "elementwise_sub_grad", "elementwise_mul_grad"}) {
    SCOPED_TRACE(type);
    run_op(s, make_op(type, {{"X", {"x"}}, {"Y", {"y"}}, {"Out@GRAD", {"g"}}},
                      {{"X@GRAD", {"dx"}}, {"Y@GRAD", {"dy"}}}));
    const float sign = std::string(type) == "elementwise_sub_grad" ? -1.0f : 1.0f;
    EXPECT_EQ(values<float>(s.get("dy")), (std::vector<float>{sign * 16777282.0f, sign * 130.0f}));
    if (std::string(type) != "elementwise_mul_grad") {
      EXPECT_EQ(values<float>(s.get("dx")), g);  // one contribution each: copied
    }
  }
  // reduce_mean sums in the same runs before it scales.
  std::vector<float> column(kRows, 1.0f);
  column[0] = 16777216.0f;
  s.var("col") = tensor<float>({kRows, 1}, column);
  run_op(s, make_op("reduce_mean", {{"X", {"col"}}}, {{"Out", {"m"}}},
                    {{"dim", Attribute(std::vector<int32_t>{0})}}));
  EXPECT_EQ(values<float>(s.get("m")), (std::vector<float>{16777282.0f * (1.0f / 130.0f)}));
}

TEST(KernelsMath, ReluAndGrad) {
  Scope s;
  s.var("x") = tensor<float>({4}, {-1, 0, 2, -3});
  run_op(s, make_op("relu", {{"X", {"x"}}}, {{"Out", {"y"}}}));
  EXPECT_EQ(values<float>(s.get("y")), (std::vector<float>{0, 0, 2, 0}));
  s.var("g") = tensor<float>({4}, {1, 2, 3, 4});
  run_op(s, make_op("relu_grad", {{"Out", {"y"}}, {"Out@GRAD", {"g"}}}, {{"X@GRAD", {"dx"}}}));
  EXPECT_EQ(values<float>(s.get("dx")), (std::vector<float>{0, 0, 3, 0}));
}

TEST(KernelsMath, SoftmaxWithCrossEntropyHardLabel) {
  Scope s;
  s.var("logits") = tensor<double>({2, 3}, {0, 0, 0, 1, 2, 3});
  s.var("label") = tensor<int64_t>({2, 1}, {1, 2});
  run_op(s, make_op("softmax_with_cross_entropy", {{"Logits", {"logits"}}, {"Label", {"label"}}},
                    {{"Softmax", {"sm"}}, {"Loss", {"loss"}}}));
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  test::expect_near(values<double>(s.get("sm")),
                    {1.0 / 3, 1.0 / 3, 1.0 / 3, std::exp(1.0) / z, std::exp(2.0) / z,
                     std::exp(3.0) / z},
                    1e-12);
  EXPECT_EQ(s.get("loss").shape(), (std::vector<int64_t>{2, 1}));
  test::expect_near(values<double>(s.get("loss")), {std::log(3.0), std::log(z) - 3.0}, 1e-12);
}

TEST(KernelsMath, SoftmaxWithCrossEntropyIsStableForHugeLogits) {
  Scope s;
  s.var("logits") = tensor<float>({1, 3}, {1000, 0, -1000});
  s.var("label") = tensor<int64_t>({1, 1}, {1});
  run_op(s, make_op("softmax_with_cross_entropy", {{"Logits", {"logits"}}, {"Label", {"label"}}},
                    {{"Softmax", {"sm"}}, {"Loss", {"loss"}}}));
  EXPECT_EQ(values<float>(s.get("sm")), (std::vector<float>{1, 0, 0}));
  EXPECT_FLOAT_EQ(values<float>(s.get("loss"))[0], 1000.0f);
}

TEST(KernelsMath, SoftmaxWithCrossEntropySoftLabelAndIgnoreIndex) {
  Scope s;
  s.var("logits") = tensor<double>({2, 2}, {0, 0, 5, 5});
  s.var("soft") = tensor<double>({2, 2}, {0.25, 0.75, 1, 0});
  run_op(s, make_op("softmax_with_cross_entropy", {{"Logits", {"logits"}}, {"Label", {"soft"}}},
                    {{"Softmax", {"sm"}}, {"Loss", {"loss"}}}, {{"soft_label", Attribute(true)}}));
  test::expect_near(values<double>(s.get("loss")), {std::log(2.0), std::log(2.0)}, 1e-12);
  s.var("hard") = tensor<int64_t>({2, 1}, {-100, 7});
  EXPECT_THROW(run_op(s, make_op("softmax_with_cross_entropy",
                                 {{"Logits", {"logits"}}, {"Label", {"hard"}}},
                                 {{"Softmax", {"sm"}}, {"Loss", {"loss"}}})),
               Error);  // label 7 is out of range
  s.var("hard") = tensor<int64_t>({2, 1}, {-100, 0});
  run_op(s, make_op("softmax_with_cross_entropy", {{"Logits", {"logits"}}, {"Label", {"hard"}}},
                    {{"Softmax", {"sm"}}, {"Loss", {"loss"}}}));
  test::expect_near(values<double>(s.get("loss")), {0.0, std::log(2.0)}, 1e-12);
}

TEST(KernelsMath, MeanAndReduceMean) {
  Scope s;
  s.var("x") = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  run_op(s, make_op("mean", {{"X", {"x"}}}, {{"Out", {"m"}}}));
  EXPECT_EQ(values<float>(s.get("m")), (std::vector<float>{3.5f}));
  run_op(s, make_op("reduce_mean", {{"X", {"x"}}}, {{"Out", {"r0"}}},
                    {{"dim", Attribute(std::vector<int32_t>{0})}}));
  EXPECT_EQ(s.get("r0").shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(values<float>(s.get("r0")), (std::vector<float>{2.5f, 3.5f, 4.5f}));
  run_op(s, make_op("reduce_mean", {{"X", {"x"}}}, {{"Out", {"r1"}}},
                    {{"dim", Attribute(std::vector<int32_t>{-1})}, {"keep_dim", Attribute(true)}}));
  EXPECT_EQ(s.get("r1").shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values<float>(s.get("r1")), (std::vector<float>{2, 5}));
  run_op(s, make_op("reduce_mean", {{"X", {"x"}}}, {{"Out", {"all"}}},
                    {{"reduce_all", Attribute(true)}}));
  EXPECT_EQ(values<float>(s.get("all")), (std::vector<float>{3.5f}));
  s.var("g") = tensor<float>({2, 1}, {6, 12});
  run_op(s, make_op("reduce_mean_grad", {{"X", {"x"}}, {"Out@GRAD", {"g"}}},
                    {{"X@GRAD", {"dx"}}},
                    {{"dim", Attribute(std::vector<int32_t>{1})}, {"keep_dim", Attribute(true)}}));
  EXPECT_EQ(values<float>(s.get("dx")), (std::vector<float>{2, 2, 2, 4, 4, 4}));
}

TEST(KernelsMath, SumAccumulatesInPlace) {
  Scope s;
  s.var("a") = tensor<float>({3}, {1, 2, 3});
  s.var("b") = tensor<float>({3}, {10, 20, 30});
  run_op(s, make_op("sum", {{"X", {"a", "b", "a"}}}, {{"Out", {"a"}}}));
  EXPECT_EQ(values<float>(s.get("a")), (std::vector<float>{12, 24, 36}));
  run_op(s, make_op("sum", {{"X", {"a", "b"}}}, {{"Out", {"c"}}}));
  EXPECT_EQ(values<float>(s.get("c")), (std::vector<float>{22, 44, 66}));
}

TEST(KernelsMath, Scale) {
  Scope s;
  s.var("x") = tensor<double>({2}, {1, 2});
  run_op(s, make_op("scale", {{"X", {"x"}}}, {{"Out", {"a"}}},
                    {{"scale", Attribute(3.0f)}, {"bias", Attribute(1.0f)}}));
  EXPECT_EQ(values<double>(s.get("a")), (std::vector<double>{4, 7}));
  run_op(s, make_op("scale", {{"X", {"x"}}}, {{"Out", {"b"}}},
                    {{"scale", Attribute(3.0f)}, {"bias", Attribute(1.0f)},
                     {"bias_after_scale", Attribute(false)}}));
  EXPECT_EQ(values<double>(s.get("b")), (std::vector<double>{6, 9}));
  run_op(s, make_op("scale", {{"X", {"x"}}}, {{"Out", {"x"}}}, {{"scale", Attribute(-1.0f)}}));
  EXPECT_EQ(values<double>(s.get("x")), (std::vector<double>{-1, -2}));
}

}  // namespace
}  // namespace ctp
