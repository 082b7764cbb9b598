// append_backward through elementwise_div (broadcast), tanh, sigmoid, sqrt,
// gelu, clip, seeded dropout and square: the grad makers of the schemas and
// the grad kernels together give the parameters' gradients that central
// finite differences of the forward program give (FP64).
#include <gtest/gtest.h>

#include <cmath>

#include "program_ir/builder.h"
#include "tests/kernels_test_util.h"
#include "transpilers/append_backward.h"

namespace ctp {
namespace {

constexpr DataType kF64 = DataType::FP64;
constexpr float kClipMin = 0.0f, kClipMax = 0.62f;

// loss = mean(tanh(dropout(square(clip(gelu(sqrt(sigmoid(tanh(w / v))))))))) with
// v [4] broadcast over w [3, 4] (tanh last, so that a dropped element's
// gradient is not 0 by itself: the mask must stop it).
Program forward_program() {
  ProgramBuilder b;
  b.param("w", {3, 4}, kF64);
  b.param("v", {4}, kF64);
  for (const char* t : {"q", "t", "s", "r", "g", "c", "sq", "d", "e"}) b.tmp(t, {3, 4}, kF64);
  b.tmp("mask", {3, 4}, DataType::UINT8);
  b.tmp("loss", {1}, kF64);
  b.op("elementwise_div").in("X", "w").in("Y", "v").out("Out", "q").attr("axis", -1);
  b.op("tanh").in("X", "q").out("Out", "t");
  b.op("sigmoid").in("X", "t").out("Out", "s");
  b.op("sqrt").in("X", "s").out("Out", "r");
  b.op("gelu").in("X", "r").out("Out", "g").attr("approximate", true);
  b.op("clip").in("X", "g").out("Out", "c").attr("min", kClipMin).attr("max", kClipMax);
  b.op("square").in("X", "c").out("Out", "sq");
  b.op("dropout").in("X", "sq").out("Out", "d").out("Mask", "mask")
      .attr("dropout_prob", 0.3f).attr("fix_seed", true).attr("seed", 6)
      .attr("dropout_implementation", std::string("upscale_in_train"));
  b.op("tanh").in("X", "d").out("Out", "e");
  b.op("mean").in("X", "e").out("Out", "loss");
  return b.build();
}

void set_parameters(Scope& scope) {
  std::vector<double> w = test::random_values(12, 71, -2.0, 2.0);
  scope.var("w") = test::tensor<double>({3, 4}, w);
  scope.var("v") = test::tensor<double>({4}, {0.8, -1.3, 1.7, 0.6});
}

double run_loss(const Program& forward, Scope& scope) {
  Executor(forward, {}).run(scope);
  return test::cpu_scalar(scope.get("loss"));
}

TEST(BackwardActivation, GradientsMatchFiniteDifferences) {
  const Program forward = forward_program();
  Program training = forward;
  const BackwardResult result = append_backward(training, BackwardOptions{.loss = "loss"});
  ASSERT_EQ(result.params_grads.size(), 2u);

  Scope scope;
  set_parameters(scope);
  Executor(training, {}).run(scope);
  // The inputs of clip stay away from its bounds, where the gradient jumps,
  // and some elements are clipped, some dropped.
  int clipped = 0, dropped = 0;
  for (int64_t i = 0; i < 12; ++i) {
    const double g = scope.get("g").data<double>()[i];
    ASSERT_GT(std::min(std::abs(g - kClipMin), std::abs(g - kClipMax)), 1e-3) << i;
    clipped += g > kClipMax;
    dropped += scope.get("mask").data<uint8_t>()[i] == 0;
  }
  EXPECT_GT(clipped, 0);
  EXPECT_GT(dropped, 0);

  for (const std::string param : {"w", "v"}) {
    SCOPED_TRACE(param);
    const Tensor analytic = scope.get(param + "@GRAD");
    Scope probe;
    set_parameters(probe);
    double* p = probe.get(param).data<double>();
    ASSERT_EQ(analytic.numel(), probe.get(param).numel());
    for (int64_t i = 0; i < analytic.numel(); ++i) {
      const double saved = p[i], step = 1e-6;
      p[i] = saved + step;
      const double up = run_loss(forward, probe);
      p[i] = saved - step;
      const double down = run_loss(forward, probe);
      p[i] = saved;
      const double numeric = (up - down) / (2 * step);
      EXPECT_NEAR(analytic.data<double>()[i], numeric, 1e-6 * std::max(1.0, std::abs(numeric)))
          << "element " << i;
    }
  }
}

}  // namespace
}  // namespace ctp
