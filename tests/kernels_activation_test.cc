// tanh, sigmoid, sqrt, square, gelu, clip and dropout on the CPU: values
// computed by hand, gradients against finite differences (GradCheck), and
// dropout's seeded mask (the generator the CUDA kernel shares, pinned
// against an independent reimplementation).
#include <gmock/gmock.h>

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

// Runs `type` on x (FP64) and returns Out.
std::vector<double> forward(const std::string& type, std::vector<double> x,
                            std::vector<NamedAttribute> attrs = {}) {
  Scope s;
  const auto n = static_cast<int64_t>(x.size());
  s.var("x") = tensor<double>({n}, std::move(x));
  run_op(s, make_op(type, {{"X", {"x"}}}, {{"Out", {"out"}}}, std::move(attrs)));
  return values<double>(s.get("out"));
}

TEST(KernelsActivation, ValuesByHand) {
  test::expect_near(forward("tanh", {0.5, 0.0}), {0.46211715726000974, 0.0}, 1e-15);
  test::expect_near(forward("sigmoid", {2.0, 0.0}), {0.8807970779778823, 0.5}, 1e-15);
  test::expect_near(forward("sqrt", {4.0, 2.25}), {2.0, 1.5}, 0);
  test::expect_near(forward("square", {-3.0, 0.5}), {9.0, 0.25}, 0);
  // gelu(1) and gelu(-0.5): 0.5 x (1 + erf(x / sqrt 2)), and the tanh form.
  test::expect_near(forward("gelu", {1.0, -0.5}), {0.8413447460685429, -0.15426876936299344},
                    1e-15);
  test::expect_near(forward("gelu", {1.0}, {{"approximate", Attribute(true)}}),
                    {0.8411919906082768}, 1e-15);
}

TEST(KernelsActivation, ClipKeepsNanAndTakesTensorBounds) {
  const std::vector<NamedAttribute> bounds = {{"min", Attribute(-0.5f)}, {"max", Attribute(1.0f)}};
  test::expect_near(forward("clip", {-2.0, 0.25, 3.0, -0.5}, bounds), {-0.5, 0.25, 1.0, -0.5}, 0);
  EXPECT_TRUE(std::isnan(forward("clip", {NAN}, bounds)[0]));
  // Min and Max tensors win over the attributes.
  Scope s;
  s.var("x") = tensor<double>({3}, {-2.0, 0.0, 2.0});
  s.var("lo") = tensor<float>({1}, {-1.0f});
  s.var("hi") = tensor<float>({1}, {0.5f});
  run_op(s, make_op("clip", {{"X", {"x"}}, {"Min", {"lo"}}, {"Max", {"hi"}}}, {{"Out", {"out"}}},
                    bounds));
  test::expect_near(values<double>(s.get("out")), {-1.0, 0.0, 0.5}, 0);
}

TEST(KernelsActivation, Gradients) {
  for (const char* type : {"tanh", "sigmoid", "square", "gelu"}) {
    SCOPED_TRACE(type);
    check_gradient({.type = type, .inputs = {{"X", random_tensor({3, 4}, 61)}}});
  }
  check_gradient({.type = "gelu",
                  .inputs = {{"X", random_tensor({3, 4}, 62)}},
                  .attrs = {{"approximate", Attribute(true)}}});
  // sqrt on positive inputs.
  check_gradient({.type = "sqrt",
                  .inputs = {{"X", tensor<double>({4}, test::random_values(4, 63, 0.2, 2.0))}}});
}

TEST(KernelsActivation, ClipGradientFlowsInsideTheBounds) {
  // Values at least 0.05 from the bounds +-0.5, where the kink is.
  std::vector<double> x = test::random_values(12, 64);
  for (double& v : x)
    if (std::abs(std::abs(v) - 0.5) < 0.05) v = 0.0;
  check_gradient({.type = "clip",
                  .inputs = {{"X", tensor<double>({3, 4}, x)}},
                  .attrs = {{"min", Attribute(-0.5f)}, {"max", Attribute(0.5f)}}});
}

TEST(KernelsActivation, ElementwiseDivAndGradWithAxis) {
  Scope s;
  s.var("x") = tensor<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  s.var("y") = tensor<double>({2}, {2, 4});
  run_op(s, make_op("elementwise_div", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}},
                    {{"axis", Attribute(int32_t{0})}}));
  test::expect_near(values<double>(s.get("out")), {0.5, 1, 1.5, 1, 1.25, 1.5}, 0);
  // Y's dims at axis 1 of X, Y of higher rank, trailing alignment: Y away from 0.
  struct Case {
    std::vector<int64_t> x, y;
    int32_t axis;
  };
  for (const Case& c : std::vector<Case>{{{2, 3, 4}, {3}, 1},
                                         {{2, 3, 4}, {3, 4}, -1},
                                         {{2, 3, 4}, {2, 3}, 0},
                                         {{3}, {2, 3, 4}, 1},
                                         {{2, 3}, {2, 3}, -1}}) {
    SCOPED_TRACE(::testing::PrintToString(c.x) + " / " + ::testing::PrintToString(c.y));
    check_gradient({.type = "elementwise_div",
                    .inputs = {{"X", random_tensor(c.x, 65)}, {"Y", random_tensor(c.y, 66, 0.3)}},
                    .wrt = {"X", "Y"},
                    .attrs = {{"axis", Attribute(c.axis)}}});
  }
}

// dropout on x = 1..n with the given attributes; returns {Out, Mask}.
std::pair<std::vector<double>, std::vector<uint8_t>> run_dropout(int64_t n,
                                                                 std::vector<NamedAttribute> attrs,
                                                                 const Tensor* seed = nullptr) {
  Scope s;
  std::vector<double> x(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = static_cast<double>(i + 1);
  s.var("x") = tensor<double>({n}, x);
  std::vector<Slot> inputs = {{"X", {"x"}}};
  if (seed) {
    s.var("seed") = *seed;
    inputs.push_back({"Seed", {"seed"}});
  }
  run_op(s, make_op("dropout", inputs, {{"Out", {"out"}}, {"Mask", {"mask"}}}, std::move(attrs)));
  const Tensor* mask = s.find("mask");
  return {values<double>(s.get("out")),
          mask && mask->initialized() ? values<uint8_t>(*mask) : std::vector<uint8_t>{}};
}

std::vector<NamedAttribute> seeded(int32_t seed, float prob, const char* mode = nullptr) {
  std::vector<NamedAttribute> a = {
      {"fix_seed", Attribute(true)}, {"seed", Attribute(seed)}, {"dropout_prob", Attribute(prob)}};
  if (mode) a.push_back({"dropout_implementation", Attribute(std::string(mode))});
  return a;
}

TEST(KernelsDropout, SeededMaskIsTheSharedGenerators) {
  // Element i is kept when splitmix64(mix(seed) + i * golden) >> 40, over
  // 2^24, is at least p: these masks come from a Python reimplementation.
  const std::vector<uint8_t> seed7 = {1, 1, 0, 1, 1, 1, 0, 0, 1, 1, 0, 1, 0, 1, 1, 0};
  const std::vector<uint8_t> seed8 = {0, 1, 1, 1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1};
  EXPECT_EQ(run_dropout(16, seeded(7, 0.5f)).second, seed7);
  EXPECT_EQ(run_dropout(16, seeded(7, 0.5f)).second, seed7) << "same seed, same mask";
  EXPECT_EQ(run_dropout(16, seeded(8, 0.5f)).second, seed8);
  // A Seed input wins over the attributes.
  const Tensor seed = tensor<int32_t>({1}, {8});
  EXPECT_EQ(run_dropout(16, seeded(7, 0.5f), &seed).second, seed8);
  // Unseeded runs draw fresh masks.
  EXPECT_NE(run_dropout(256, {}).second, run_dropout(256, {}).second);
}

TEST(KernelsDropout, ModesScaleAsPaddles) {
  const float p = 0.25f;
  const auto [down, mask] = run_dropout(4000, seeded(3, p));
  const auto [up, up_mask] = run_dropout(4000, seeded(3, p, "upscale_in_train"));
  EXPECT_EQ(mask, up_mask);
  int64_t kept = 0;
  for (std::size_t i = 0; i < mask.size(); ++i) {
    const double x = static_cast<double>(i + 1);
    kept += mask[i];
    EXPECT_EQ(down[i], mask[i] ? x : 0.0) << i;
    EXPECT_EQ(up[i], mask[i] ? x / static_cast<double>(1.0f - p) : 0.0) << i;
  }
  EXPECT_NEAR(static_cast<double>(kept) / 4000.0, 0.75, 0.03);
  // Inference: downgrade_in_infer scales by 1 - p, upscale_in_train passes X.
  std::vector<NamedAttribute> test_down = seeded(3, p);
  test_down.push_back({"is_test", Attribute(true)});
  EXPECT_EQ(run_dropout(2, test_down).first, (std::vector<double>{0.75, 1.5}));
  std::vector<NamedAttribute> test_up = seeded(3, p, "upscale_in_train");
  test_up.push_back({"is_test", Attribute(int32_t{1})});  // older writers' INT
  EXPECT_EQ(run_dropout(2, test_up).first, (std::vector<double>{1.0, 2.0}));
  // p = 1 drops everything, without dividing by 0; p = 0 keeps everything.
  EXPECT_EQ(run_dropout(3, seeded(3, 1.0f, "upscale_in_train")).first,
            (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(run_dropout(3, seeded(3, 0.0f, "upscale_in_train")).first,
            (std::vector<double>{1, 2, 3}));
}

TEST(KernelsDropout, GradientThroughTheMask) {
  for (const char* mode : {"downgrade_in_infer", "upscale_in_train"}) {
    SCOPED_TRACE(mode);
    check_gradient({.type = "dropout",
                    .inputs = {{"X", random_tensor({4, 5}, 67)}},
                    .outputs = {"Out", "Mask"},
                    .attrs = seeded(11, 0.4f, mode)});
  }
}

TEST(KernelsDropout, HalfPrecisionIsTheFloatResultRounded) {
  Scope s;
  Tensor x(DataType::FP16, {64});
  Tensor xf(DataType::FP32, {64});
  const std::vector<double> v = test::random_values(64, 68);
  for (int64_t i = 0; i < 64; ++i) {
    x.data<uint16_t>()[i] = float16::from_float(static_cast<float>(v[static_cast<std::size_t>(i)]));
    xf.data<float>()[i] = float16::to_float(x.data<uint16_t>()[i]);
  }
  s.var("x") = x;
  s.var("xf") = xf;
  const auto attrs = seeded(5, 0.3f, "upscale_in_train");
  run_op(s, make_op("dropout", {{"X", {"x"}}}, {{"Out", {"out"}}, {"Mask", {"mask"}}}, attrs));
  run_op(s, make_op("dropout", {{"X", {"xf"}}}, {{"Out", {"outf"}}, {"Mask", {"maskf"}}}, attrs));
  ASSERT_EQ(s.get("out").dtype(), DataType::FP16);
  EXPECT_EQ(values<uint8_t>(s.get("mask")), values<uint8_t>(s.get("maskf")));
  for (int64_t i = 0; i < 64; ++i)
    EXPECT_EQ(s.get("out").data<uint16_t>()[i], float16::from_float(s.get("outf").data<float>()[i]))
        << i;
}

}  // namespace
}  // namespace ctp
