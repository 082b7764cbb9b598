// The CPU kernels of softmax and cross_entropy2 against values worked out by
// hand, and their run-time errors (labels the rules check as they are read).
// Their gradients are checked in kernels_grad_test.cc, their shape errors in
// op_rule_cases.h.
#include <gmock/gmock.h>

#include <cmath>

#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::make_op;
using test::run_op;
using test::tensor;
using test::values;

TEST(KernelsSoftmax, RowsOnTheLastAxis) {
  Scope s;
  // exp of the first row is 1, 2, 3 (sum 6); the second row is uniform.
  s.var("x") = tensor<double>({2, 3}, {0, std::log(2.0), std::log(3.0), 5, 5, 5});
  run_op(s, make_op("softmax", {{"X", {"x"}}}, {{"Out", {"out"}}}));
  EXPECT_EQ(s.get("out").shape(), (std::vector<int64_t>{2, 3}));
  test::expect_near(values<double>(s.get("out")),
                    {1.0 / 6, 2.0 / 6, 3.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-15);
}

TEST(KernelsSoftmax, ColumnsOnAxisZero) {
  Scope s;
  // Columns (0, ln 3) and (ln 3, 0): exp 1 and 3 out of 4.
  s.var("x") = tensor<double>({2, 2}, {0, std::log(3.0), std::log(3.0), 0});
  run_op(s, make_op("softmax", {{"X", {"x"}}}, {{"Out", {"out"}}},
                    {{"axis", Attribute(int32_t{0})}}));
  test::expect_near(values<double>(s.get("out")), {0.25, 0.75, 0.75, 0.25}, 1e-15);
}

TEST(KernelsSoftmax, HugeInputsDoNotOverflowAndInPlaceWorks) {
  Scope s;
  s.var("x") = tensor<float>({1, 3}, {1000, 1000, -1000});
  run_op(s, make_op("softmax", {{"X", {"x"}}}, {{"Out", {"x"}}}));
  EXPECT_EQ(values<float>(s.get("x")), (std::vector<float>{0.5f, 0.5f, 0.0f}));
}

TEST(KernelsSoftmax, GradOfAKnownRow) {
  Scope s;
  // dX = Out * (dOut - sum(dOut * Out)): Out (0.5, 0.25, 0.25), dOut (1, 0, 0)
  // gives sum 0.5 and dX (0.25, -0.125, -0.125).
  s.var("out") = tensor<double>({1, 3}, {0.5, 0.25, 0.25});
  s.var("dout") = tensor<double>({1, 3}, {1, 0, 0});
  run_op(s, make_op("softmax_grad", {{"Out", {"out"}}, {"Out@GRAD", {"dout"}}},
                    {{"X@GRAD", {"dx"}}}));
  test::expect_near(values<double>(s.get("dx")), {0.25, -0.125, -0.125}, 1e-15);
}

TEST(KernelsCrossEntropy2, LossMatchXAndXShape) {
  Scope s;
  s.var("x") = tensor<double>({3, 4}, {0.1, 0.2, 0.3, 0.4,  //
                                       0.25, 0.25, 0.25, 0.25,  //
                                       0.7, 0.1, 0.1, 0.1});
  s.var("label") = tensor<int64_t>({3, 1}, {1, -100, 0});  // the middle row is ignored
  run_op(s, make_op("cross_entropy2", {{"X", {"x"}}, {"Label", {"label"}}},
                    {{"Y", {"y"}}, {"XShape", {"xs"}}, {"MatchX", {"mx"}}}));
  EXPECT_EQ(s.get("y").shape(), (std::vector<int64_t>{3, 1}));
  test::expect_near(values<double>(s.get("y")), {-std::log(0.2), 0.0, -std::log(0.7)}, 1e-15);
  test::expect_near(values<double>(s.get("mx")), {0.2, 0.0, 0.7}, 0.0);
  EXPECT_EQ(s.get("xs").shape(), (std::vector<int64_t>{3, 4, 0}));
  EXPECT_EQ(s.get("xs").numel(), 0);

  s.var("dy") = tensor<double>({3, 1}, {2, 5, -1});
  run_op(s, make_op("cross_entropy_grad2",
                    {{"Label", {"label"}}, {"MatchX", {"mx"}}, {"XShape", {"xs"}},
                     {"Y@GRAD", {"dy"}}},
                    {{"X@GRAD", {"dx"}}}));
  EXPECT_EQ(s.get("dx").shape(), (std::vector<int64_t>{3, 4}));
  test::expect_near(values<double>(s.get("dx")),
                    {0, -2 / 0.2, 0, 0, 0, 0, 0, 0, 1 / 0.7, 0, 0, 0}, 1e-14);
}

TEST(KernelsCrossEntropy2, FlatInt32LabelsIgnoreIndexAndZeroProbability) {
  Scope s;
  s.var("x") = tensor<float>({2, 2}, {0, 1, 0.5f, 0.5f});
  s.var("label") = tensor<int32_t>({2}, {0, 3});  // row 1 ignored through ignore_index 3
  run_op(s, make_op("cross_entropy2", {{"X", {"x"}}, {"Label", {"label"}}},
                    {{"Y", {"y"}}, {"XShape", {"xs"}}, {"MatchX", {"mx"}}},
                    {{"ignore_index", Attribute(int32_t{3})}}));
  EXPECT_EQ(s.get("y").shape(), (std::vector<int64_t>{2}));
  // log(0) counts as -1e20 (Paddle's TolerableValue): large, not infinite.
  EXPECT_EQ(values<float>(s.get("y")), (std::vector<float>{1e20f, 0.0f}));
}

TEST(KernelsCrossEntropy2, LabelOutsideTheClassesNamesTheOp) {
  Scope s;
  s.var("x") = tensor<float>({2, 4}, {0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f});
  s.var("label") = tensor<int64_t>({2, 1}, {0, 4});
  try {
    run_op(s, make_op("cross_entropy2", {{"X", {"x"}}, {"Label", {"label"}}},
                      {{"Y", {"y"}}, {"XShape", {"xs"}}, {"MatchX", {"mx"}}}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "block 0, op 0 'cross_entropy2': Label 4 at row 1 is outside [0, 4)");
  }
}

}  // namespace
}  // namespace ctp
