// The adamw and rmsprop CPU kernels against hand-computed first steps and
// the textbook formulas (Paddle's) over several steps.
#include <cmath>

#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::make_op;
using test::run_op;
using test::tensor;
using test::values;

Op adamw_op(bool with_decay, float coeff, float lr_ratio) {
  return make_op("adamw",
                 {{"Param", {"p"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}, {"Moment1", {"m1"}},
                  {"Moment2", {"m2"}}, {"Beta1Pow", {"b1p"}}, {"Beta2Pow", {"b2p"}}},
                 {{"ParamOut", {"p"}}, {"Moment1Out", {"m1"}}, {"Moment2Out", {"m2"}},
                  {"Beta1PowOut", {"b1p"}}, {"Beta2PowOut", {"b2p"}}},
                 {{"beta1", Attribute(0.9f)}, {"beta2", Attribute(0.999f)},
                  {"epsilon", Attribute(1e-8f)}, {"coeff", Attribute(coeff)},
                  {"lr_ratio", Attribute(lr_ratio)}, {"with_decay", Attribute(with_decay)}});
}

double adamw_first_step(bool with_decay, float coeff, float lr_ratio) {
  Scope s;
  s.var("p") = tensor<double>({1}, {1});
  s.var("g") = tensor<double>({1}, {0.5});
  s.var("lr") = tensor<float>({1}, {0.01f});
  s.var("m1") = tensor<double>({1}, {0});
  s.var("m2") = tensor<double>({1}, {0});
  s.var("b1p") = tensor<float>({1}, {0.9f});
  s.var("b2p") = tensor<float>({1}, {0.999f});
  run_op(s, adamw_op(with_decay, coeff, lr_ratio));
  EXPECT_FLOAT_EQ(values<float>(s.get("b1p"))[0], 0.81f);
  return values<double>(s.get("p"))[0];
}

TEST(KernelsOptimizer, AdamWFirstStepByHand) {
  // Adam's first step moves p by lr (the corrected m1 / sqrt(m2) is 1).
  // Decay first: p = 1 * (1 - 0.01 * 0.1) = 0.999, then 0.999 - 0.01.
  EXPECT_NEAR(adamw_first_step(true, 0.1f, 1.0f), 0.989, 1e-6);
  // with_decay false is Adam.
  EXPECT_NEAR(adamw_first_step(false, 0.1f, 1.0f), 0.99, 1e-6);
  // lr_ratio scales both: p = 1 * (1 - 0.005 * 0.1) - 0.005.
  EXPECT_NEAR(adamw_first_step(true, 0.1f, 0.5f), 0.9995 - 0.005, 1e-6);
}

Op rmsprop_op(bool centered, float momentum) {
  return make_op("rmsprop",
                 {{"Param", {"p"}}, {"MeanSquare", {"ms"}}, {"MeanGrad", {"mg"}},
                  {"LearningRate", {"lr"}}, {"Grad", {"g"}}, {"Moment", {"mom"}}},
                 {{"ParamOut", {"p"}}, {"MomentOut", {"mom"}}, {"MeanSquareOut", {"ms"}},
                  {"MeanGradOut", {"mg"}}},
                 {{"epsilon", Attribute(1e-6f)}, {"decay", Attribute(0.9f)},
                  {"momentum", Attribute(momentum)}, {"centered", Attribute(centered)}});
}

// Three steps with changing gradients against the formulas in double.
void check_rmsprop(bool centered, float momentum) {
  const double rho = 0.9f, eps = 1e-6f, mu = momentum, lr = 0.01;
  const std::vector<std::vector<double>> grads = {{0.5, -1}, {0.25, 2}, {-0.75, 0.5}};
  std::vector<double> p = {1, -2}, ms = {0, 0}, mg = {0, 0}, mom = {0, 0};
  Scope s;
  s.var("p") = tensor<double>({2}, p);
  s.var("ms") = tensor<double>({2}, ms);
  s.var("mg") = tensor<double>({2}, mg);
  s.var("mom") = tensor<double>({2}, mom);
  s.var("lr") = tensor<double>({1}, {lr});
  for (const std::vector<double>& g : grads) {
    s.var("g") = tensor<double>({2}, g);
    run_op(s, rmsprop_op(centered, momentum));
    for (int i = 0; i < 2; ++i) {
      ms[i] = rho * ms[i] + (1 - rho) * g[i] * g[i];
      mg[i] = rho * mg[i] + (1 - rho) * g[i];
      const double denominator = centered ? ms[i] - mg[i] * mg[i] + eps : ms[i] + eps;
      mom[i] = mu * mom[i] + lr * g[i] / std::sqrt(denominator);
      p[i] -= mom[i];
    }
    test::expect_near(values<double>(s.get("p")), p, 1e-12);
    test::expect_near(values<double>(s.get("ms")), ms, 1e-12);
  }
}

TEST(KernelsOptimizer, RmspropFirstStepByHand) {
  Scope s;
  s.var("p") = tensor<float>({1}, {1});
  s.var("g") = tensor<float>({1}, {0.5f});
  s.var("ms") = tensor<float>({1}, {0});
  s.var("mg") = tensor<float>({1}, {0});
  s.var("mom") = tensor<float>({1}, {0});
  s.var("lr") = tensor<float>({1}, {0.01f});
  run_op(s, rmsprop_op(false, 0.0f));
  // ms = 0.1 * 0.25; p = 1 - 0.01 * 0.5 / sqrt(0.025 + 1e-6)
  EXPECT_NEAR(values<float>(s.get("ms"))[0], 0.025f, 1e-8);
  EXPECT_NEAR(values<float>(s.get("p"))[0], 1 - 0.005 / std::sqrt(0.025001), 1e-6);
}

TEST(KernelsOptimizer, RmspropPlainAndCenteredOverSteps) {
  check_rmsprop(false, 0.0f);
  check_rmsprop(false, 0.5f);
  check_rmsprop(true, 0.5f);
}

}  // namespace
}  // namespace ctp
