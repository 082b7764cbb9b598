// A grad op that reads the gradient of a forward output that does not reach
// the loss: append_backward writes fill_zeros_like for it (Paddle's
// _remove_no_grad_branch_), and the backward runs. Here a split whose second
// piece is unused: split's grad (a concat of the pieces' gradients) reads
// zeros for that piece, and the parameter's gradient is the loss's finite
// differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "program_ir/builder.h"
#include "tests/kernels_test_util.h"
#include "transpilers/append_backward.h"

namespace ctp {
namespace {

TEST(BackwardUnusedOutput, FillZerosLikeFeedsTheGradOfAnUnusedPiece) {
  const DataType f64 = DataType::FP64;
  ProgramBuilder b;
  b.data("x", {2, 6}, f64);
  b.param("w", {6, 4}, f64);
  b.tmp("h", {2, 4}, f64);
  b.tmp("a", {2, 3}, f64);
  b.tmp("c", {2, 1}, f64);
  b.tmp("loss", {1}, f64);
  b.op("mul").in("X", "x").in("Y", "w").out("Out", "h");
  b.op("split").in("X", "h").out("Out", std::vector<std::string>{"a", "c"})
      .attr("axis", Attribute(int32_t{1})).attr("sections", Attribute(std::vector<int32_t>{3, 1}));
  b.op("mean").in("X", "a").out("Out", "loss");
  Program program = b.build();
  append_backward(program, BackwardOptions{.loss = "loss"});

  // fill_zeros_like(c) -> c@GRAD comes right before split's grad, the concat.
  const std::vector<Op> ops(program.global_block().ops().begin(),
                            program.global_block().ops().end());
  const auto zeros = std::find_if(ops.begin(), ops.end(),
                                  [](const Op& op) { return op.type == "fill_zeros_like"; });
  ASSERT_NE(zeros, ops.end());
  ASSERT_NE(zeros + 1, ops.end());
  EXPECT_EQ((zeros + 1)->type, "concat");
  const Op& fill = *zeros;
  ASSERT_TRUE(fill.has_input("X") && fill.has_output("Out"));
  EXPECT_EQ(*fill.input("X"), std::vector<std::string>{"c"});
  EXPECT_EQ(*fill.output("Out"), std::vector<std::string>{"c@GRAD"});

  Scope scope;
  scope.var("x") = test::random_tensor({2, 6}, 141);
  scope.var("w") = test::random_tensor({6, 4}, 142);
  Executor executor(program, {});
  const auto loss = [&] {
    executor.run(scope);
    return scope.get("loss").data<double>()[0];
  };
  loss();
  EXPECT_EQ(test::values<double>(scope.get("c@GRAD")), std::vector<double>(2, 0.0));
  const std::vector<double> analytic = test::values<double>(scope.get("w@GRAD"));
  Tensor& w = scope.get("w");
  ASSERT_EQ(static_cast<int64_t>(analytic.size()), w.numel());
  for (int64_t i = 0; i < w.numel(); ++i) {
    double* v = w.data<double>() + i;
    const double saved = *v, step = 1e-6;
    *v = saved + step;
    const double up = loss();
    *v = saved - step;
    const double down = loss();
    *v = saved;
    const double numeric = (up - down) / (2 * step);
    EXPECT_NEAR(analytic[static_cast<std::size_t>(i)], numeric, 1e-8) << "element " << i;
  }
  // The unused piece's column of w gets no gradient.
  for (std::size_t row = 0; row < 6; ++row) EXPECT_EQ(analytic[row * 4 + 3], 0.0);
}

TEST(BackwardUnusedOutput, FillZerosLikeKernelKeepsShapeAndDtype) {
  Scope s;
  s.var("x") = test::tensor<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  test::run_op(s, test::make_op("fill_zeros_like", {{"X", {"x"}}}, {{"Out", {"z"}}}));
  EXPECT_EQ(s.get("z").dtype(), DataType::INT64);
  EXPECT_EQ(s.get("z").shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(test::values<int64_t>(s.get("z")), std::vector<int64_t>(6, 0));
  s.var("f") = test::tensor<float>({1}, {7.5f});
  test::run_op(s, test::make_op("fill_zeros_like", {{"X", {"f"}}}, {{"Out", {"f"}}}));
  EXPECT_EQ(test::values<float>(s.get("f")), std::vector<float>{0.0f});
}

}  // namespace
}  // namespace ctp
