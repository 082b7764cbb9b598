// The CPU kernels of the shape ops (shape, reshape2 (also to a shape given
// by tensors), flatten_contiguous_range,
// flatten2, squeeze2, unsqueeze2, transpose2, slice, stack) against values worked out
// by hand, their XShape outputs, and their gradients against finite
// differences. Their shape errors are cases of op_rule_cases.h.
#include <gmock/gmock.h>

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

Attribute int_list(std::vector<int32_t> v) { return Attribute(std::move(v)); }

const std::vector<double> kSix = {0, 1, 2, 3, 4, 5};

// Runs a one-input op with outputs Out and XShape on x; returns Out.
Tensor run_with_xshape(Scope& s, const std::string& type, const Tensor& x,
                       std::vector<NamedAttribute> attrs) {
  s.var("x") = x;
  run_op(s, make_op(type, {{"X", {"x"}}}, {{"Out", {"out"}}, {"XShape", {"xs"}}},
                    std::move(attrs)));
  Shape expected_xshape = {0};
  expected_xshape.insert(expected_xshape.end(), x.shape().begin(), x.shape().end());
  EXPECT_EQ(s.get("xs").shape(), expected_xshape) << type;
  EXPECT_EQ(s.get("xs").numel(), 0) << type;
  return s.get("out");
}

TEST(KernelsShape, Reshape2CopiesZeroDimsAndInfersMinusOne) {
  Scope s;
  const Tensor out = run_with_xshape(s, "reshape2", tensor<double>({2, 3}, kSix),
                                     {{"shape", int_list({0, -1, 1})}});
  EXPECT_EQ(out.shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(values<double>(out), kSix);
  EXPECT_FALSE(out.shares_buffer_with(s.get("x")));  // a copy (see shape_kernels.cc)
  // The gradient takes X's shape back from XShape.
  s.var("g") = tensor<double>({2, 3, 1}, kSix);
  run_op(s, make_op("reshape2_grad", {{"XShape", {"xs"}}, {"Out@GRAD", {"g"}}},
                    {{"X@GRAD", {"dx"}}}));
  EXPECT_EQ(s.get("dx").shape(), (Shape{2, 3}));
  EXPECT_EQ(values<double>(s.get("dx")), kSix);
}

// A shape given at run time: ShapeTensor (one element per dim, INT32 or
// INT64; it wins over Shape) or Shape (a 1-D tensor), with the attribute's
// rules (0 copies X's dim, one -1 takes the rest).
TEST(KernelsShape, Reshape2ShapeFromTensors) {
  Scope s;
  s.var("x") = tensor<double>({2, 3}, kSix);
  s.var("three") = tensor<int64_t>({1}, {3});
  s.var("rest") = tensor<int32_t>({1}, {-1});
  s.var("zero") = tensor<int32_t>({1}, {0});
  s.var("shape") = tensor<int32_t>({3}, {1, 6, 1});
  const auto reshape = [&](std::vector<Slot> inputs) {
    inputs.insert(inputs.begin(), Slot{"X", {"x"}});
    run_op(s, make_op("reshape2", std::move(inputs), {{"Out", {"out"}}, {"XShape", {"xs"}}},
                      {{"shape", int_list({6})}}));
    return s.get("out");
  };
  Tensor out = reshape({{"ShapeTensor", {"three", "rest"}}});
  EXPECT_EQ(out.shape(), (Shape{3, 2}));
  EXPECT_EQ(values<double>(out), kSix);
  EXPECT_EQ(reshape({{"ShapeTensor", {"zero", "three"}}}).shape(), (Shape{2, 3}));
  EXPECT_EQ(reshape({{"Shape", {"shape"}}}).shape(), (Shape{1, 6, 1}));
  EXPECT_EQ(reshape({{"Shape", {"shape"}}, {"ShapeTensor", {"rest"}}}).shape(), (Shape{6}));
  try {
    reshape({{"ShapeTensor", {"three", "three"}}});
    FAIL() << "[3, 3] accepted for 6 elements";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the shape [3, 3] of input ShapeTensor gives [3, 3] "
                                         "holds 9 elements, but input X 'x' [2, 3] holds 6"),
              std::string::npos)
        << e.what();
  }
  try {
    reshape({{"ShapeTensor", {"shape"}}});
    FAIL() << "a ShapeTensor of 3 elements accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds 3 elements; each ShapeTensor gives one dim"),
              std::string::npos)
        << e.what();
  }
}

// shape: Input's dims as INT32, whatever Input's dtype; a 0-D Input gives an
// empty tensor.
TEST(KernelsShape, ShapeGivesInputDimsAsInt32) {
  Scope s;
  s.var("x") = tensor<double>({2, 3, 1}, kSix);
  run_op(s, make_op("shape", {{"Input", {"x"}}}, {{"Out", {"dims"}}}));
  EXPECT_EQ(s.get("dims").dtype(), DataType::INT32);
  EXPECT_EQ(s.get("dims").shape(), (Shape{3}));
  EXPECT_EQ(values<int32_t>(s.get("dims")), (std::vector<int32_t>{2, 3, 1}));
  s.var("ids") = tensor<int64_t>({4, 0}, {});
  run_op(s, make_op("shape", {{"Input", {"ids"}}}, {{"Out", {"dims"}}}));
  EXPECT_EQ(values<int32_t>(s.get("dims")), (std::vector<int32_t>{4, 0}));
  s.var("scalar") = tensor<float>({}, {7});
  run_op(s, make_op("shape", {{"Input", {"scalar"}}}, {{"Out", {"dims"}}}));
  EXPECT_EQ(s.get("dims").shape(), (Shape{0}));
}

TEST(KernelsShape, Reshape2InPlaceOnlyChangesTheShape) {
  Scope s;
  s.var("x") = tensor<float>({6}, {1, 2, 3, 4, 5, 6});
  run_op(s, make_op("reshape2", {{"X", {"x"}}}, {{"Out", {"x"}}},
                    {{"shape", int_list({3, 2})}}));
  EXPECT_EQ(s.get("x").shape(), (Shape{3, 2}));
  EXPECT_EQ(values<float>(s.get("x")), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(KernelsShape, FlattenSqueezeUnsqueezeShapes) {
  Scope s;
  const Tensor x = tensor<double>({1, 2, 3, 1}, kSix);
  EXPECT_EQ(run_with_xshape(s, "flatten_contiguous_range", x,
                            {{"start_axis", Attribute(int32_t{1})},
                             {"stop_axis", Attribute(int32_t{-1})}}).shape(),
            (Shape{1, 6}));
  EXPECT_EQ(run_with_xshape(s, "flatten_contiguous_range", x, {}).shape(), (Shape{1, 2, 3, 1}));
  // flatten2: [dims before axis, the rest]; axis 0 gives [1, all].
  EXPECT_EQ(run_with_xshape(s, "flatten2", x, {}).shape(), (Shape{1, 6}));
  EXPECT_EQ(run_with_xshape(s, "flatten2", x, {{"axis", Attribute(int32_t{3})}}).shape(),
            (Shape{6, 1}));
  const Tensor f = run_with_xshape(s, "flatten2", x, {{"axis", Attribute(int32_t{0})}});
  EXPECT_EQ(f.shape(), (Shape{1, 6}));
  EXPECT_EQ(values<double>(f), kSix);
  EXPECT_THROW(run_with_xshape(s, "flatten2", x, {{"axis", Attribute(int32_t{5})}}), Error);
  EXPECT_EQ(run_with_xshape(s, "squeeze2", x, {}).shape(), (Shape{2, 3}));
  // Only the listed dims that are 1 go; dim 1 (size 2) stays, as in Paddle 2.
  EXPECT_EQ(run_with_xshape(s, "squeeze2", x, {{"axes", int_list({-1, 1})}}).shape(),
            (Shape{1, 2, 3}));
  // Each axis counts in the shape built so far: [2, 3] -> [1, 2, 3] -> [1, 2, 3, 1].
  const Tensor u = run_with_xshape(s, "unsqueeze2", tensor<double>({2, 3}, kSix),
                                   {{"axes", int_list({0, -1})}});
  EXPECT_EQ(u.shape(), (Shape{1, 2, 3, 1}));
  EXPECT_EQ(values<double>(u), kSix);
  EXPECT_EQ(run_with_xshape(s, "unsqueeze2", tensor<double>({2, 3}, kSix),
                            {{"axes", int_list({1, 1})}}).shape(),
            (Shape{2, 1, 1, 3}));
}

TEST(KernelsShape, Transpose2PermutesAndItsGradPermutesBack) {
  Scope s;
  // [2, 3] -> [3, 2]: rows of the result are X's columns.
  const Tensor out = run_with_xshape(s, "transpose2", tensor<double>({2, 3}, kSix),
                                     {{"axis", int_list({1, 0})}});
  EXPECT_EQ(out.shape(), (Shape{3, 2}));
  EXPECT_EQ(values<double>(out), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  // A rank-3 case: Out[k][i][j] = X[i][j][k] for X [2, 2, 2] with axis [2, 0, 1].
  const Tensor y = run_with_xshape(s, "transpose2", tensor<int64_t>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}),
                                   {{"axis", int_list({2, 0, 1})}});
  EXPECT_EQ(values<int64_t>(y), (std::vector<int64_t>{0, 2, 4, 6, 1, 3, 5, 7}));
  s.var("g") = y;
  run_op(s, make_op("transpose2_grad", {{"XShape", {"xs"}}, {"Out@GRAD", {"g"}}},
                    {{"X@GRAD", {"dx"}}}, {{"axis", int_list({2, 0, 1})}}));
  EXPECT_EQ(values<int64_t>(s.get("dx")), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(KernelsShape, SliceClampsNegativeAndLargeBoundsAndDecreases) {
  Scope s;
  s.var("x") = tensor<double>({2, 3}, kSix);
  // Columns -2 .. 100 (clamped to 3) of row 1, the row dim dropped.
  run_op(s, make_op("slice", {{"Input", {"x"}}}, {{"Out", {"out"}}},
                    {{"axes", int_list({0, 1})}, {"starts", int_list({1, -2})},
                     {"ends", int_list({2, 100})}, {"decrease_axis", int_list({0})}}));
  EXPECT_EQ(s.get("out").shape(), (Shape{2}));
  EXPECT_EQ(values<double>(s.get("out")), (std::vector<double>{4, 5}));
  s.var("g") = tensor<double>({2}, {10, 20});
  run_op(s, make_op("slice_grad", {{"Input", {"x"}}, {"Out@GRAD", {"g"}}},
                    {{"Input@GRAD", {"dx"}}},
                    {{"axes", int_list({0, 1})}, {"starts", int_list({1, -2})},
                     {"ends", int_list({2, 100})}, {"decrease_axis", int_list({0})}}));
  EXPECT_EQ(values<double>(s.get("dx")), (std::vector<double>{0, 0, 0, 0, 10, 20}));
  // An empty range gives a 0 dim; INT64 (shape tensors) slice as well.
  s.var("shape") = tensor<int64_t>({4}, {8, 3, 32, 32});
  run_op(s, make_op("slice", {{"Input", {"shape"}}}, {{"Out", {"tail"}}},
                    {{"axes", int_list({0})}, {"starts", int_list({2})}, {"ends", int_list({4})}}));
  EXPECT_EQ(values<int64_t>(s.get("tail")), (std::vector<int64_t>{32, 32}));
  run_op(s, make_op("slice", {{"Input", {"shape"}}}, {{"Out", {"none"}}},
                    {{"axes", int_list({0})}, {"starts", int_list({3})}, {"ends", int_list({1})}}));
  EXPECT_EQ(s.get("none").shape(), (Shape{0}));
}

TEST(KernelsShape, StackAlongEachAxisAndItsGrad) {
  Scope s;
  s.var("a") = tensor<double>({2, 2}, {0, 1, 2, 3});
  s.var("b") = tensor<double>({2, 2}, {10, 11, 12, 13});
  run_op(s, make_op("stack", {{"X", {"a", "b"}}}, {{"Y", {"y0"}}}));
  EXPECT_EQ(s.get("y0").shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(values<double>(s.get("y0")), (std::vector<double>{0, 1, 2, 3, 10, 11, 12, 13}));
  run_op(s, make_op("stack", {{"X", {"a", "b"}}}, {{"Y", {"y2"}}},
                    {{"axis", Attribute(int32_t{-1})}}));
  EXPECT_EQ(s.get("y2").shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(values<double>(s.get("y2")), (std::vector<double>{0, 10, 1, 11, 2, 12, 3, 13}));
  run_op(s, make_op("stack_grad", {{"Y@GRAD", {"y2"}}}, {{"X@GRAD", {"da", "db"}}},
                    {{"axis", Attribute(int32_t{-1})}}));
  EXPECT_EQ(values<double>(s.get("da")), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(values<double>(s.get("db")), (std::vector<double>{10, 11, 12, 13}));
  // A grad of an input that needs none is left out as @EMPTY@.
  run_op(s, make_op("stack_grad", {{"Y@GRAD", {"y0"}}}, {{"X@GRAD", {"@EMPTY@", "db0"}}}));
  EXPECT_EQ(values<double>(s.get("db0")), (std::vector<double>{10, 11, 12, 13}));
}

TEST(KernelsShapeGrad, AgainstFiniteDifferences) {
  const Tensor x = random_tensor({2, 3, 4}, 61);
  const std::vector<std::string> xshape_out = {"Out", "XShape"};
  check_gradient({.type = "reshape2", .inputs = {{"X", x}}, .outputs = xshape_out,
                  .attrs = {{"shape", int_list({4, -1})}}});
  check_gradient({.type = "flatten_contiguous_range", .inputs = {{"X", x}},
                  .outputs = xshape_out,
                  .attrs = {{"start_axis", Attribute(int32_t{0})},
                            {"stop_axis", Attribute(int32_t{1})}}});
  check_gradient({.type = "flatten2", .inputs = {{"X", x}}, .outputs = xshape_out,
                  .attrs = {{"axis", Attribute(int32_t{2})}}});
  check_gradient({.type = "squeeze2", .inputs = {{"X", random_tensor({3, 1, 2}, 62)}},
                  .outputs = xshape_out});
  check_gradient({.type = "unsqueeze2", .inputs = {{"X", x}}, .outputs = xshape_out,
                  .attrs = {{"axes", int_list({1})}}});
  check_gradient({.type = "transpose2", .inputs = {{"X", x}}, .outputs = xshape_out,
                  .attrs = {{"axis", int_list({1, 2, 0})}}});
  check_gradient({.type = "slice", .inputs = {{"Input", x}}, .wrt = {"Input"},
                  .attrs = {{"axes", int_list({2, 0})}, {"starts", int_list({1, -1})},
                            {"ends", int_list({3, 2})}, {"decrease_axis", int_list({0})}}});
  check_gradient({.type = "stack", .inputs = {{"X", x}}, .outputs = {"Y"}, .objective = "Y",
                  .attrs = {{"axis", Attribute(int32_t{1})}}});
}

}  // namespace
}  // namespace ctp
