// append_backward through conv2d, batch_norm, relu and pool2d (their grad
// makers) writes a backward whose parameter gradients, run on the CPU
// kernels, are the loss's finite differences.
#include <gtest/gtest.h>

#include <cmath>

#include "program_ir/builder.h"
#include "tests/kernels_test_util.h"
#include "transpilers/append_backward.h"

namespace ctp {
namespace {

TEST(AppendBackwardCv, ConvBatchNormPoolGradientsMatchFiniteDifferences) {
  const DataType f64 = DataType::FP64;
  ProgramBuilder b;
  b.data("img", {2, 2, 5, 5}, f64);
  b.param("w", {3, 2, 3, 3}, f64);
  b.param("scale", {3}, f64);
  b.param("bias", {3}, f64);
  b.persistable("mean", {3}, f64).stop_gradient = true;
  b.persistable("var", {3}, f64).stop_gradient = true;
  b.tmp("c", {2, 3, 5, 5}, f64);
  b.tmp("y", {2, 3, 5, 5}, f64);
  b.tmp("r", {2, 3, 5, 5}, f64);
  b.tmp("sm", {3}, f64);
  b.tmp("sv", {3}, f64);
  b.tmp("p", {2, 3, 2, 2}, f64);
  b.tmp("loss", {1}, f64);
  b.op("conv2d").in("Input", "img").in("Filter", "w").out("Output", "c")
      .attr("paddings", Attribute(std::vector<int32_t>{1, 1}));
  b.op("batch_norm").in("X", "c").in("Scale", "scale").in("Bias", "bias").in("Mean", "mean")
      .in("Variance", "var").out("Y", "y").out("MeanOut", "mean").out("VarianceOut", "var")
      .out("SavedMean", "sm").out("SavedVariance", "sv");
  b.op("relu").in("X", "y").out("Out", "r");
  b.op("pool2d").in("X", "r").out("Out", "p")
      .attr("pooling_type", Attribute("max"))
      .attr("ksize", Attribute(std::vector<int32_t>{2, 2}))
      .attr("strides", Attribute(std::vector<int32_t>{2, 2}));
  b.op("mean").in("X", "p").out("Out", "loss");
  Program program = b.build();
  append_backward(program, BackwardOptions{.loss = "loss"});

  Scope scope;
  scope.var("img") = test::random_tensor({2, 2, 5, 5}, 131);
  scope.var("w") = test::random_tensor({3, 2, 3, 3}, 132);
  scope.var("scale") = test::random_tensor({3}, 133);
  scope.var("bias") = test::random_tensor({3}, 134);
  scope.var("mean") = test::tensor<double>({3}, {0, 0, 0});
  scope.var("var") = test::tensor<double>({3}, {1, 1, 1});
  Executor executor(program, {});
  const auto loss = [&] {
    executor.run(scope);
    return scope.get("loss").data<double>()[0];
  };
  loss();
  for (const char* param : {"w", "scale", "bias"}) {
    SCOPED_TRACE(param);
    const std::vector<double> analytic =
        test::values<double>(scope.get(std::string(param) + "@GRAD"));  // a copy: runs rewrite it
    Tensor& value = scope.get(param);
    ASSERT_EQ(static_cast<int64_t>(analytic.size()), value.numel());
    for (int64_t i = 0; i < value.numel(); ++i) {
      double* x = value.data<double>() + i;
      const double saved = *x, step = 1e-6;
      *x = saved + step;
      const double up = loss();
      *x = saved - step;
      const double down = loss();
      *x = saved;
      const double numeric = (up - down) / (2 * step);
      EXPECT_NEAR(analytic[static_cast<std::size_t>(i)], numeric, 1e-6 * std::max(1.0, std::abs(numeric)))
          << "element " << i;
    }
  }
}

}  // namespace
}  // namespace ctp
