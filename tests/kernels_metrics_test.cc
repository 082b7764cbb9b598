// The CPU kernels of top_k, top_k_v2 and accuracy against values worked out
// by hand (ties, NaN, a K tensor, another axis, smallest first), their
// run-time errors, and top_k's gradient against finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::make_op;
using test::run_op;
using test::tensor;
using test::values;
using Shape = std::vector<int64_t>;

Op top_k_op(const std::string& type, std::vector<Slot> in, std::vector<NamedAttribute> attrs) {
  return make_op(type, std::move(in), {{"Out", {"out"}}, {"Indices", {"idx"}}}, std::move(attrs));
}

TEST(KernelsTopK, LargestFirstTiesByLowerIndexNanOnTop) {
  Scope s;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Row 0: 3 at indices 1 and 2 (tie: 1 first). Row 1: NaN ranks above 5.
  s.var("x") = tensor<float>({2, 4}, {1, 3, 3, 2, -1, nan, 5, 0});
  run_op(s, top_k_op("top_k", {{"X", {"x"}}, {"K", {}}}, {{"k", Attribute(int32_t{2})}}));
  EXPECT_EQ(s.get("out").shape(), (Shape{2, 2}));
  EXPECT_EQ(s.get("idx").dtype(), DataType::INT64);
  EXPECT_EQ(values<int64_t>(s.get("idx")), (std::vector<int64_t>{1, 2, 1, 2}));
  const std::vector<float> out = values<float>(s.get("out"));
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(out[1], 3.0f);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(out[3], 5.0f);
}

TEST(KernelsTopK, KTensorOverridesTheAttribute) {
  Scope s;
  s.var("x") = tensor<int64_t>({1, 5}, {7, -2, 9, 4, 8});
  s.var("k") = tensor<int32_t>({1}, {3});
  run_op(s, top_k_op("top_k", {{"X", {"x"}}, {"K", {"k"}}}, {{"k", Attribute(int32_t{1})}}));
  EXPECT_EQ(values<int64_t>(s.get("out")), (std::vector<int64_t>{9, 8, 7}));
  EXPECT_EQ(values<int64_t>(s.get("idx")), (std::vector<int64_t>{2, 4, 0}));
}

TEST(KernelsTopK, V2AlongAxisZeroSmallestFirst) {
  Scope s;
  // Columns (4, 2, 6) and (1, 5, 0): the two smallest of each.
  s.var("x") = tensor<double>({3, 2}, {4, 1, 2, 5, 6, 0});
  run_op(s, top_k_op("top_k_v2", {{"X", {"x"}}},
                     {{"k", Attribute(int32_t{2})},
                      {"axis", Attribute(int32_t{0})},
                      {"largest", Attribute(false)}}));
  EXPECT_EQ(s.get("out").shape(), (Shape{2, 2}));
  EXPECT_EQ(values<double>(s.get("out")), (std::vector<double>{2, 0, 4, 1}));
  EXPECT_EQ(values<int64_t>(s.get("idx")), (std::vector<int64_t>{1, 2, 0, 0}));
}

TEST(KernelsTopK, KAboveTheRowIsAnErrorNamingTheOp) {
  Scope s;
  s.var("x") = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  s.var("k") = tensor<int32_t>({1}, {4});
  try {
    run_op(s, top_k_op("top_k", {{"X", {"x"}}, {"K", {"k"}}}, {}));
    FAIL() << "k 4 over a row of 3 accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'top_k'"), std::string::npos) << what;
    EXPECT_NE(what.find("input K 'k' holds k, which is 4, more than the 3 elements"),
              std::string::npos)
        << what;
  }
}

// Out@GRAD lands on the picked elements: d/dX of sum(W * top_k(X)).
TEST(KernelsTopK, GradientMatchesFiniteDifferences) {
  for (const char* type : {"top_k", "top_k_v2"}) {
    SCOPED_TRACE(type);
    test::GradCheck c;
    c.type = type;
    c.inputs = {{"X", test::random_tensor({3, 5}, 21)}};
    c.outputs = {"Out", "Indices"};
    c.attrs = {{"k", Attribute(int32_t{2})}};
    test::check_gradient(c);
  }
  test::GradCheck axis0;
  axis0.type = "top_k_v2";
  axis0.inputs = {{"X", test::random_tensor({4, 2, 3}, 22)}};
  axis0.outputs = {"Out", "Indices"};
  axis0.attrs = {{"k", Attribute(int32_t{3})}, {"axis", Attribute(int32_t{0})},
                 {"largest", Attribute(false)}};
  test::check_gradient(axis0);
}

Op accuracy_op() {
  return make_op("accuracy", {{"Out", {"out"}}, {"Indices", {"idx"}}, {"Label", {"label"}}},
                 {{"Accuracy", {"acc"}}, {"Correct", {"correct"}}, {"Total", {"total"}}});
}

TEST(KernelsAccuracy, CountsRowsWhoseLabelIsAmongTheirK) {
  Scope s;
  // Rows' picks (0,1) (2,0) (1,1) (3,2) against labels 1 1 1 0: rows 0 and 2.
  s.var("out") = tensor<float>({4, 2}, {0.9f, 0.1f, 0.5f, 0.4f, 0.6f, 0.3f, 0.7f, 0.2f});
  s.var("idx") = tensor<int64_t>({4, 2}, {0, 1, 2, 0, 1, 1, 3, 2});
  s.var("label") = tensor<int64_t>({4, 1}, {1, 1, 1, 0});
  run_op(s, accuracy_op());
  EXPECT_EQ(s.get("acc").dtype(), DataType::FP32);
  EXPECT_EQ(values<float>(s.get("acc")), (std::vector<float>{0.5f}));
  EXPECT_EQ(values<int32_t>(s.get("correct")), (std::vector<int32_t>{2}));
  EXPECT_EQ(values<int32_t>(s.get("total")), (std::vector<int32_t>{4}));
  // INT32 labels, k = 1: rows 0 and 1 of three right.
  s.var("out") = tensor<float>({3, 1}, {1, 1, 1});
  s.var("idx") = tensor<int64_t>({3, 1}, {2, 0, 1});
  s.var("label") = tensor<int32_t>({3, 1}, {2, 0, 0});
  run_op(s, accuracy_op());
  EXPECT_FLOAT_EQ(values<float>(s.get("acc"))[0], 2.0f / 3.0f);
  EXPECT_EQ(values<int32_t>(s.get("correct")), (std::vector<int32_t>{2}));
}

TEST(KernelsAccuracy, NoRowsGiveZeroAndANegativeLabelFails) {
  Scope s;
  s.var("out") = Tensor(DataType::FP32, {0, 1});
  s.var("idx") = Tensor(DataType::INT64, {0, 1});
  s.var("label") = Tensor(DataType::INT64, {0, 1});
  run_op(s, accuracy_op());
  EXPECT_EQ(values<float>(s.get("acc")), (std::vector<float>{0.0f}));
  EXPECT_EQ(values<int32_t>(s.get("total")), (std::vector<int32_t>{0}));
  s.var("out") = tensor<float>({2, 1}, {1, 1});
  s.var("idx") = tensor<int64_t>({2, 1}, {0, 1});
  s.var("label") = tensor<int64_t>({2, 1}, {0, -1});
  try {
    run_op(s, accuracy_op());
    FAIL() << "negative label accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Label -1 at row 1 is negative"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ctp
