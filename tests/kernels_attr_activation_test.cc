// relu6, hard_sigmoid, hard_swish and swish on the CPU: values computed by
// hand (defaults and other attributes), gradients against finite
// differences (GradCheck), FP16 computed in float.
#include <gtest/gtest.h>

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

std::vector<double> forward(const std::string& type, std::vector<double> x,
                            std::vector<NamedAttribute> attrs = {}) {
  Scope s;
  const auto n = static_cast<int64_t>(x.size());
  s.var("x") = tensor<double>({n}, std::move(x));
  run_op(s, make_op(type, {{"X", {"x"}}}, {{"Out", {"out"}}}, std::move(attrs)));
  return values<double>(s.get("out"));
}

TEST(KernelsAttrActivation, ValuesByHand) {
  // relu6: min(max(x, 0), threshold).
  test::expect_near(forward("relu6", {-1, 0.5, 7}), {0, 0.5, 6}, 0);
  test::expect_near(forward("relu6", {-1, 0.5, 7}, {{"threshold", Attribute(2.0f)}}), {0, 0.5, 2},
                    0);
  // hard_sigmoid: clip(0.2 x + 0.5, 0, 1).
  test::expect_near(forward("hard_sigmoid", {-5, 0, 1, 5}), {0, 0.5, 0.7, 1}, 1e-7);
  test::expect_near(forward("hard_sigmoid", {1},
                            {{"slope", Attribute(0.5f)}, {"offset", Attribute(0.25f)}}),
                    {0.75}, 1e-7);
  // hard_swish: x * clip(x + 3, 0, 6) / 6.
  test::expect_near(forward("hard_swish", {-4, -1, 1, 4}), {0, -1.0 / 3, 2.0 / 3, 4}, 1e-15);
  test::expect_near(forward("hard_swish", {1},
                            {{"threshold", Attribute(3.0f)},
                             {"scale", Attribute(2.0f)},
                             {"offset", Attribute(1.0f)}}),
                    {1.0}, 1e-15);  // 1 * min(2, 3) / 2
  // swish: x * sigmoid(beta x).
  test::expect_near(forward("swish", {0, 2}), {0, 2 / (1 + std::exp(-2.0))}, 1e-15);
  test::expect_near(forward("swish", {1}, {{"beta", Attribute(2.0f)}}),
                    {1 / (1 + std::exp(-2.0))}, 1e-7);
}

TEST(KernelsAttrActivation, GradientsMatchFiniteDifferences) {
  // Values in [-1, 1), away from 0; relu6 at threshold 0.5 and hard_swish
  // at offset 0.2, threshold 0.9 cross both kinks inside that range.
  check_gradient({.type = "relu6",
                  .inputs = {{"X", random_tensor({4, 5}, 71, 0.01)}},
                  .attrs = {{"threshold", Attribute(0.5f)}}});
  check_gradient({.type = "hard_sigmoid",
                  .inputs = {{"X", random_tensor({4, 5}, 72, 0.01)}},
                  .attrs = {{"slope", Attribute(1.5f)}}});
  check_gradient({.type = "hard_swish", .inputs = {{"X", random_tensor({4, 5}, 73, 0.01)}}});
  check_gradient({.type = "hard_swish",
                  .inputs = {{"X", random_tensor({4, 5}, 74, 0.01)}},
                  .attrs = {{"threshold", Attribute(0.9f)},
                            {"scale", Attribute(2.0f)},
                            {"offset", Attribute(0.2f)}}});
  check_gradient({.type = "swish", .inputs = {{"X", random_tensor({4, 5}, 75)}}});
  check_gradient({.type = "swish",
                  .inputs = {{"X", random_tensor({4, 5}, 76)}},
                  .attrs = {{"beta", Attribute(1.7f)}}});
}

TEST(KernelsAttrActivation, Fp16ComputedInFloat) {
  Scope s;
  Tensor x(DataType::FP16, {2});
  x.data<uint16_t>()[0] = float16::from_float(-1.0f);
  x.data<uint16_t>()[1] = float16::from_float(1.0f);
  s.var("x") = x;
  run_op(s, make_op("hard_swish", {{"X", {"x"}}}, {{"Out", {"out"}}}));
  ASSERT_EQ(s.get("out").dtype(), DataType::FP16);
  EXPECT_EQ(float16::to_float(s.get("out").data<uint16_t>()[0]),
            float16::to_float(float16::from_float(-1.0f / 3)));
  EXPECT_EQ(float16::to_float(s.get("out").data<uint16_t>()[1]),
            float16::to_float(float16::from_float(2.0f / 3)));
}

}  // namespace
}  // namespace ctp
