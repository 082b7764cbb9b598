// The CPU kernels of conv2d, depthwise_conv2d and pool2d against values
// worked out by hand, and their gradients against finite differences. Their
// shape and attribute errors are in op_rule_cases_cv.h.
#include <gtest/gtest.h>

#include <numeric>

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

using Ints = std::vector<int32_t>;

// 1, 2, ..., n as a [shape] FP64 tensor.
Tensor counting(std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 1.0);
  return tensor<double>(std::move(shape), v);
}

// Runs conv2d on x and w with `attrs`, returning Output.
Tensor conv(const Tensor& x, const Tensor& w, std::vector<NamedAttribute> attrs,
            const std::string& type = "conv2d") {
  Scope s;
  s.var("x") = x;
  s.var("w") = w;
  run_op(s, make_op(type, {{"Input", {"x"}}, {"Filter", {"w"}}}, {{"Output", {"out"}}},
                    std::move(attrs)));
  return s.get("out");
}

Tensor pool(const Tensor& x, std::vector<NamedAttribute> attrs) {
  Scope s;
  s.var("x") = x;
  run_op(s, make_op("pool2d", {{"X", {"x"}}}, {{"Out", {"out"}}}, std::move(attrs)));
  return s.get("out");
}

// x = 1..9 as one 3x3 plane throughout.
TEST(KernelsConv, Conv2dStridesAndPaddings) {
  const Tensor x = counting({1, 1, 3, 3});
  const Tensor diagonal = tensor<double>({1, 1, 2, 2}, {1, 0, 0, 1});
  // Unpadded: x[i][j] + x[i+1][j+1].
  Tensor out = conv(x, diagonal, {});
  EXPECT_EQ(out.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(values<double>(out), (std::vector<double>{6, 8, 12, 14}));
  // Padding 1, stride 2: windows start at -1 and 1 in each dim.
  out = conv(x, diagonal,
             {{"paddings", Attribute(Ints{1, 1})}, {"strides", Attribute(Ints{2, 2})}});
  EXPECT_EQ(values<double>(out), (std::vector<double>{1, 3, 7, 14}));
  // Four paddings (top 1, bottom 0, left 0, right 1): 3x3 out, the first
  // row reading the padding above.
  out = conv(x, diagonal, {{"paddings", Attribute(Ints{1, 0, 0, 1})}});
  EXPECT_EQ(out.shape(), (Shape{1, 1, 3, 3}));
  EXPECT_EQ(values<double>(out), (std::vector<double>{2, 3, 0, 6, 8, 3, 12, 14, 6}));
}

TEST(KernelsConv, Conv2dSameAndValid) {
  const Tensor x = counting({1, 1, 3, 3});
  const Tensor ones = tensor<double>({1, 1, 2, 2}, {1, 1, 1, 1});
  // SAME with stride 2: out ceil(3 / 2) = 2, the one cell of padding at the
  // bottom and right.
  Tensor out = conv(x, ones, {{"strides", Attribute(Ints{2, 2})},
                              {"paddings", Attribute(Ints{5, 5})},  // ignored
                              {"padding_algorithm", Attribute("SAME")}});
  EXPECT_EQ(values<double>(out), (std::vector<double>{12, 9, 15, 9}));
  out = conv(x, ones, {{"strides", Attribute(Ints{2, 2})},
                       {"paddings", Attribute(Ints{5, 5})},
                       {"padding_algorithm", Attribute("VALID")}});
  EXPECT_EQ(values<double>(out), (std::vector<double>{12}));
}

TEST(KernelsConv, GroupsAndDilations) {
  // Two groups of one channel; dilation 2 makes each 2x2 filter read the
  // corners of the 3x3 plane.
  const Tensor x = counting({1, 2, 3, 3});  // plane 0: 1..9, plane 1: 10..18
  const Tensor w = tensor<double>({2, 1, 2, 2}, {1, 1, 1, 1, 2, 2, 2, 2});
  const Tensor out = conv(x, w, {{"groups", Attribute(int32_t{2})},
                                 {"dilations", Attribute(Ints{2, 2})}});
  EXPECT_EQ(out.shape(), (Shape{1, 2, 1, 1}));
  EXPECT_EQ(values<double>(out), (std::vector<double>{1 + 3 + 7 + 9, 2 * (10 + 12 + 16 + 18)}));
  // depthwise_conv2d is the same op.
  EXPECT_EQ(values<double>(conv(x, w, {{"groups", Attribute(int32_t{2})},
                                       {"dilations", Attribute(Ints{2, 2})}},
                                "depthwise_conv2d")),
            values<double>(out));
}

TEST(KernelsConv, Conv2dInFloat16IsTheFloatResultRounded) {
  Tensor x(DataType::FP16, {1, 1, 3, 3}), w(DataType::FP16, {1, 1, 2, 2});
  for (int64_t i = 0; i < 9; ++i)
    x.data<uint16_t>()[i] = float16::from_float(static_cast<float>(i + 1));
  for (int64_t i = 0; i < 4; ++i)
    w.data<uint16_t>()[i] = float16::from_float(i % 3 == 0 ? 1.f : 0.f);
  const Tensor out = conv(x, w, {});
  ASSERT_EQ(out.dtype(), DataType::FP16);
  std::vector<float> got;
  for (int64_t i = 0; i < 4; ++i) got.push_back(float16::to_float(out.data<uint16_t>()[i]));
  EXPECT_EQ(got, (std::vector<float>{6, 8, 12, 14}));
}

TEST(KernelsConvGrad, Conv2dGroupsStridesDilationsAsymmetricPaddings) {
  check_gradient({.type = "conv2d",
                  .inputs = {{"Input", random_tensor({2, 4, 6, 5}, 61)},
                             {"Filter", random_tensor({6, 2, 3, 2}, 62)}},
                  .outputs = {"Output"},
                  .objective = "Output",
                  .wrt = {"Input", "Filter"},
                  .attrs = {{"groups", Attribute(int32_t{2})},
                            {"strides", Attribute(Ints{2, 1})},
                            {"dilations", Attribute(Ints{1, 2})},
                            {"paddings", Attribute(Ints{1, 0, 2, 1})}}});
}

TEST(KernelsConvGrad, Conv2dSame) {
  check_gradient({.type = "conv2d",
                  .inputs = {{"Input", random_tensor({1, 2, 5, 4}, 63)},
                             {"Filter", random_tensor({3, 2, 2, 3}, 64)}},
                  .outputs = {"Output"},
                  .objective = "Output",
                  .wrt = {"Input", "Filter"},
                  .attrs = {{"strides", Attribute(Ints{2, 2})},
                            {"padding_algorithm", Attribute("SAME")}}});
}

TEST(KernelsConvGrad, DepthwiseConv2d) {
  check_gradient({.type = "depthwise_conv2d",
                  .inputs = {{"Input", random_tensor({2, 3, 4, 4}, 65)},
                             {"Filter", random_tensor({6, 1, 3, 3}, 66)}},
                  .outputs = {"Output"},
                  .objective = "Output",
                  .wrt = {"Input", "Filter"},
                  .attrs = {{"groups", Attribute(int32_t{3})},
                            {"paddings", Attribute(Ints{1, 1})}}});
}

std::vector<NamedAttribute> pool_attrs(const char* type, Ints ksize,
                                       std::vector<NamedAttribute> more = {}) {
  more.push_back({"pooling_type", Attribute(type)});
  more.push_back({"ksize", Attribute(std::move(ksize))});
  return more;
}

TEST(KernelsPool, MaxAndAvgWindows) {
  const Tensor x16 = counting({1, 1, 4, 4});
  const std::vector<NamedAttribute> stride2 = {{"strides", Attribute(Ints{2, 2})}};
  EXPECT_EQ(values<double>(pool(x16, pool_attrs("max", {2, 2}, stride2))),
            (std::vector<double>{6, 8, 14, 16}));
  const Tensor x = counting({1, 1, 3, 3});
  // 3x3 windows, stride 2, padding 1: each window holds 4 cells of the input.
  const std::vector<NamedAttribute> padded = {{"strides", Attribute(Ints{2, 2})},
                                              {"paddings", Attribute(Ints{1, 1})}};
  EXPECT_EQ(values<double>(pool(x, pool_attrs("avg", {3, 3}, padded))),
            (std::vector<double>{3, 4, 6, 7}));  // exclusive: by the 4 cells
  std::vector<NamedAttribute> inclusive = padded;
  inclusive.push_back({"exclusive", Attribute(false)});
  test::expect_near(values<double>(pool(x, pool_attrs("avg", {3, 3}, inclusive))),
                    {12.0 / 9, 16.0 / 9, 24.0 / 9, 28.0 / 9}, 1e-15);  // by the window's 9
}

TEST(KernelsPool, CeilModeSameGlobalAndAdaptive) {
  const Tensor x = counting({1, 1, 3, 3});
  const std::vector<NamedAttribute> stride2 = {{"strides", Attribute(Ints{2, 2})}};
  EXPECT_EQ(values<double>(pool(x, pool_attrs("max", {2, 2}, stride2))),
            (std::vector<double>{5}));
  std::vector<NamedAttribute> ceil = stride2;
  ceil.push_back({"ceil_mode", Attribute(true)});
  EXPECT_EQ(values<double>(pool(x, pool_attrs("max", {2, 2}, ceil))),
            (std::vector<double>{5, 6, 8, 9}));
  std::vector<NamedAttribute> same = stride2;
  same.push_back({"padding_algorithm", Attribute("SAME")});
  EXPECT_EQ(values<double>(pool(x, pool_attrs("max", {2, 2}, same))),
            (std::vector<double>{5, 6, 8, 9}));
  const Tensor global =
      pool(counting({1, 2, 3, 3}),
           pool_attrs("avg", {0, 0}, {{"global_pooling", Attribute(true)}}));  // ksize ignored
  EXPECT_EQ(global.shape(), (Shape{1, 2, 1, 1}));
  EXPECT_EQ(values<double>(global), (std::vector<double>{5, 14}));
  // Adaptive 2x2 over 3 cells: windows [0, 2) and [1, 3) in each dim.
  const Tensor adaptive = pool(x, pool_attrs("avg", {2, 2}, {{"adaptive", Attribute(true)}}));
  EXPECT_EQ(adaptive.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(values<double>(adaptive), (std::vector<double>{3, 4, 6, 7}));
}

TEST(KernelsPool, MaxGradGoesToTheFirstMaximum) {
  Scope s;
  s.var("x") = tensor<double>({1, 1, 2, 2}, {1, 3, 3, 2});
  run_op(s, make_op("pool2d", {{"X", {"x"}}}, {{"Out", {"out"}}}, pool_attrs("max", {2, 2})));
  s.var("dout") = tensor<double>({1, 1, 1, 1}, {5});
  run_op(s, make_op("pool2d_grad", {{"X", {"x"}}, {"Out", {"out"}}, {"Out@GRAD", {"dout"}}},
                    {{"X@GRAD", {"dx"}}}, pool_attrs("max", {2, 2})));
  EXPECT_EQ(values<double>(s.get("dx")), (std::vector<double>{0, 5, 0, 0}));
}

void check_pool_gradient(const char* type, Ints ksize, std::vector<NamedAttribute> attrs,
                         uint64_t seed) {
  check_gradient({.type = "pool2d",
                  .inputs = {{"X", random_tensor({2, 2, 5, 5}, seed)}},
                  .outputs = {"Out"},
                  .objective = "Out",
                  .wrt = {"X"},
                  .attrs = pool_attrs(type, std::move(ksize), std::move(attrs))});
}

TEST(KernelsPoolGrad, AvgAndMax) {
  const std::vector<NamedAttribute> padded = {{"strides", Attribute(Ints{2, 2})},
                                              {"paddings", Attribute(Ints{1, 0, 1, 0})},
                                              {"ceil_mode", Attribute(true)}};
  check_pool_gradient("avg", {3, 2}, padded, 71);
  std::vector<NamedAttribute> inclusive = padded;
  inclusive.push_back({"exclusive", Attribute(false)});
  check_pool_gradient("avg", {3, 2}, inclusive, 72);
  check_pool_gradient("max", {3, 2}, padded, 73);  // random values: no ties
  check_pool_gradient("avg", {2, 3}, {{"adaptive", Attribute(true)}}, 74);
  check_pool_gradient("max", {2, 3}, {{"adaptive", Attribute(true)}}, 75);
  check_pool_gradient("max", {1, 1}, {{"global_pooling", Attribute(true)}}, 76);
}

}  // namespace
}  // namespace ctp
