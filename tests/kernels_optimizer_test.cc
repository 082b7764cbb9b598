// Optimizer kernels against hand-computed updates and textbook formulas.
#include <cmath>

#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::make_op;
using test::run_op;
using test::tensor;
using test::values;

TEST(KernelsOptimizer, SgdInPlace) {
  Scope s;
  s.var("p") = tensor<float>({2}, {1, 2});
  s.var("g") = tensor<float>({2}, {0.5f, -1});
  s.var("lr") = tensor<float>({1}, {0.1f});
  const void* before = s.get("p").raw_data();
  run_op(s, make_op("sgd", {{"Param", {"p"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}},
                    {{"ParamOut", {"p"}}}));
  test::expect_near(values<float>(s.get("p")), {0.95f, 2.1f}, 1e-7);
  EXPECT_EQ(s.get("p").raw_data(), before);
}

Op momentum_op(bool nesterov) {
  return make_op("momentum",
                 {{"Param", {"p"}}, {"Grad", {"g"}}, {"Velocity", {"v"}}, {"LearningRate", {"lr"}}},
                 {{"ParamOut", {"p"}}, {"VelocityOut", {"v"}}},
                 {{"mu", Attribute(0.9f)}, {"use_nesterov", Attribute(nesterov)}});
}

TEST(KernelsOptimizer, MomentumPlainAndNesterov) {
  for (bool nesterov : {false, true}) {
    Scope s;
    s.var("p") = tensor<double>({1}, {1});
    s.var("g") = tensor<double>({1}, {2});
    s.var("v") = tensor<double>({1}, {0.5});
    s.var("lr") = tensor<float>({1}, {0.1f});
    run_op(s, momentum_op(nesterov));
    EXPECT_NEAR(values<double>(s.get("v"))[0], 2.45, 1e-7);  // 0.9 * 0.5 + 2 (mu is a float attr)
    // plain: 1 - 0.1 * 2.45; Nesterov: 1 - 0.1 * (2 + 0.9 * 2.45)
    EXPECT_NEAR(values<double>(s.get("p"))[0], nesterov ? 0.5795 : 0.755, 1e-7);
  }
}

Op adam_op() {
  return make_op("adam",
                 {{"Param", {"p"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}, {"Moment1", {"m1"}},
                  {"Moment2", {"m2"}}, {"Beta1Pow", {"b1p"}}, {"Beta2Pow", {"b2p"}}},
                 {{"ParamOut", {"p"}}, {"Moment1Out", {"m1"}}, {"Moment2Out", {"m2"}},
                  {"Beta1PowOut", {"b1p"}}, {"Beta2PowOut", {"b2p"}}},
                 {{"beta1", Attribute(0.9f)}, {"beta2", Attribute(0.999f)},
                  {"epsilon", Attribute(1e-8f)}});
}

TEST(KernelsOptimizer, AdamFirstStepByHand) {
  Scope s;
  s.var("p") = tensor<float>({1}, {1});
  s.var("g") = tensor<float>({1}, {0.5f});
  s.var("lr") = tensor<float>({1}, {0.01f});
  s.var("m1") = tensor<float>({1}, {0});
  s.var("m2") = tensor<float>({1}, {0});
  // Paddle's Adam starts the powers at beta (the first step's correction).
  s.var("b1p") = tensor<float>({1}, {0.9f});
  s.var("b2p") = tensor<float>({1}, {0.999f});
  run_op(s, adam_op());
  EXPECT_NEAR(values<float>(s.get("m1"))[0], 0.05f, 1e-7);
  EXPECT_NEAR(values<float>(s.get("m2"))[0], 0.00025f, 1e-8);  // (1 - 0.999f) is inexact
  // lr_t = 0.01 * sqrt(0.001) / 0.1; p = 1 - lr_t * 0.05 / sqrt(0.00025) = 1 - 0.01
  EXPECT_NEAR(values<float>(s.get("p"))[0], 0.99f, 1e-6);
  EXPECT_FLOAT_EQ(values<float>(s.get("b1p"))[0], 0.81f);
  EXPECT_FLOAT_EQ(values<float>(s.get("b2p"))[0], 0.999f * 0.999f);
}

TEST(KernelsOptimizer, AdamMatchesTextbookAdamOverSteps) {
  const double lr = 0.05, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  Scope s;
  s.var("p") = tensor<double>({3}, {1, -2, 0.5});
  s.var("lr") = tensor<double>({1}, {lr});
  s.var("m1") = tensor<double>({3}, {0, 0, 0});
  s.var("m2") = tensor<double>({3}, {0, 0, 0});
  s.var("b1p") = tensor<float>({1}, {0.9f});
  s.var("b2p") = tensor<float>({1}, {0.999f});
  std::vector<double> p = {1, -2, 0.5}, m(3, 0), v(3, 0);
  for (int t = 1; t <= 5; ++t) {
    const std::vector<double> g = test::random_values(3, static_cast<uint64_t>(t));
    s.var("g") = tensor<double>({3}, g);
    run_op(s, adam_op());
    for (int i = 0; i < 3; ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      const double m_hat = m[i] / (1 - std::pow(b1, t)), v_hat = v[i] / (1 - std::pow(b2, t));
      p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
  // The float beta powers carry ~1e-7 relative error into the corrections.
  test::expect_near(values<double>(s.get("p")), p, 1e-6);
}

Op lamb_op(float weight_decay, bool always_adapt) {
  return make_op("lamb",
                 {{"Param", {"p"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}, {"Moment1", {"m1"}},
                  {"Moment2", {"m2"}}, {"Beta1Pow", {"b1p"}}, {"Beta2Pow", {"b2p"}}},
                 {{"ParamOut", {"p"}}, {"Moment1Out", {"m1"}}, {"Moment2Out", {"m2"}},
                  {"Beta1PowOut", {"b1p"}}, {"Beta2PowOut", {"b2p"}}},
                 {{"beta1", Attribute(0.9f)}, {"beta2", Attribute(0.999f)},
                  {"epsilon", Attribute(0.0f)}, {"weight_decay", Attribute(weight_decay)},
                  {"always_adapt", Attribute(always_adapt)}});
}

std::vector<double> lamb_step(float weight_decay, bool always_adapt) {
  Scope s;
  s.var("p") = tensor<double>({2}, {3, 4});  // norm 5
  s.var("g") = tensor<double>({2}, {1, 1});
  s.var("lr") = tensor<double>({1}, {0.01});
  s.var("m1") = tensor<double>({2}, {0, 0});
  s.var("m2") = tensor<double>({2}, {0, 0});
  s.var("b1p") = tensor<float>({1}, {0.9f});
  s.var("b2p") = tensor<float>({1}, {0.999f});
  run_op(s, lamb_op(weight_decay, always_adapt));
  EXPECT_FLOAT_EQ(values<float>(s.get("b1p"))[0], 0.81f);
  return values<double>(s.get("p"));
}

TEST(KernelsOptimizer, LambTrustRatioByHand) {
  // First step: the bias-corrected direction is g / |g| = [1, 1].
  // Decay 0.1: r = [1.3, 1.4], ratio 5 / sqrt(3.65), p -= 0.01 * ratio * r.
  const double ratio = 5 / std::sqrt(3.65);
  test::expect_near(lamb_step(0.1f, false), {3 - 0.013 * ratio, 4 - 0.014 * ratio}, 1e-6);
  // No decay: no adaptation unless always_adapt (then ratio 5 / sqrt(2)).
  test::expect_near(lamb_step(0.0f, false), {2.99, 3.99}, 1e-6);
  const double adapted = 0.01 * 5 / std::sqrt(2.0);
  test::expect_near(lamb_step(0.0f, true), {3 - adapted, 4 - adapted}, 1e-6);
}

TEST(KernelsOptimizer, MismatchedGradIsAnError) {
  Scope s;
  s.var("p") = tensor<float>({2}, {1, 2});
  s.var("g") = tensor<float>({3}, {1, 2, 3});
  s.var("lr") = tensor<float>({1}, {0.1f});
  try {
    run_op(s, make_op("sgd", {{"Param", {"p"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}},
                      {{"ParamOut", {"p"}}}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'sgd'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("input Grad 'g' [3] FP32 does not match input Param"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ctp
