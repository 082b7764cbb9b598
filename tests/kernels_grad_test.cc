// Every _grad kernel against central finite differences of its forward
// kernel, in FP64, including broadcasting and transposed/batched cases.
#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::GradCheck;
using test::check_gradient;
using test::random_tensor;

TEST(KernelsGrad, Mul) {
  check_gradient({.type = "mul",
                  .inputs = {{"X", random_tensor({3, 4}, 1)}, {"Y", random_tensor({4, 5}, 2)}},
                  .wrt = {"X", "Y"}});
}

TEST(KernelsGrad, MulWithNumColDims) {
  check_gradient({.type = "mul",
                  .inputs = {{"X", random_tensor({2, 3, 4}, 3)}, {"Y", random_tensor({4, 2, 5}, 4)}},
                  .wrt = {"X", "Y"},
                  .attrs = {{"x_num_col_dims", Attribute(int32_t{2})},
                            {"y_num_col_dims", Attribute(int32_t{1})}}});
}

TEST(KernelsGrad, MatmulV2AllTransposes) {
  for (bool tx : {false, true})
    for (bool ty : {false, true}) {
      SCOPED_TRACE("trans_x=" + std::to_string(tx) + " trans_y=" + std::to_string(ty));
      std::vector<int64_t> xs = tx ? std::vector<int64_t>{4, 3} : std::vector<int64_t>{3, 4};
      std::vector<int64_t> ys = ty ? std::vector<int64_t>{5, 4} : std::vector<int64_t>{4, 5};
      check_gradient({.type = "matmul_v2",
                      .inputs = {{"X", random_tensor(xs, 5)}, {"Y", random_tensor(ys, 6)}},
                      .wrt = {"X", "Y"},
                      .attrs = {{"trans_x", Attribute(tx)}, {"trans_y", Attribute(ty)}}});
    }
}

TEST(KernelsGrad, MatmulV2BatchBroadcast) {
  check_gradient({.type = "matmul_v2",
                  .inputs = {{"X", random_tensor({2, 1, 3, 4}, 7)}, {"Y", random_tensor({3, 4, 2}, 8)}},
                  .wrt = {"X", "Y"}});
  check_gradient({.type = "matmul_v2",
                  .inputs = {{"X", random_tensor({2, 4, 3}, 9)}, {"Y", random_tensor({2, 5, 4}, 10)}},
                  .wrt = {"X", "Y"},
                  .attrs = {{"trans_x", Attribute(true)}, {"trans_y", Attribute(true)}}});
}

TEST(KernelsGrad, MatmulV2Vectors) {
  check_gradient({.type = "matmul_v2",
                  .inputs = {{"X", random_tensor({4}, 11)}, {"Y", random_tensor({2, 4, 3}, 12)}},
                  .wrt = {"X", "Y"}});
  check_gradient({.type = "matmul_v2",
                  .inputs = {{"X", random_tensor({3, 4}, 13)}, {"Y", random_tensor({4}, 14)}},
                  .wrt = {"X", "Y"}});
}

struct BroadcastCase {
  std::vector<int64_t> x, y;
  int32_t axis;
};

class ElementwiseGrad : public ::testing::TestWithParam<std::string> {};

TEST_P(ElementwiseGrad, BroadcastShapes) {
  const std::vector<BroadcastCase> cases = {
      {{2, 3}, {2, 3}, -1},     {{2, 3, 4}, {4}, -1},       {{2, 3, 4}, {3}, 1},
      {{2, 3, 4}, {3, 4}, 1},   {{2, 3, 4}, {2}, 0},        {{2, 3, 4}, {3, 1}, 1},
      {{2, 1, 4}, {1, 3, 1}, -1}, {{4}, {2, 3, 4}, -1},     {{3}, {2, 3, 4}, 1},
      {{2, 3, 4}, {1}, -1}};
  for (const BroadcastCase& b : cases) {
    SCOPED_TRACE(::testing::PrintToString(b.x) + " op " + ::testing::PrintToString(b.y) +
                 " axis " + std::to_string(b.axis));
    check_gradient({.type = GetParam(),
                    .inputs = {{"X", random_tensor(b.x, 21)}, {"Y", random_tensor(b.y, 22)}},
                    .wrt = {"X", "Y"},
                    .attrs = {{"axis", Attribute(b.axis)}}});
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, ElementwiseGrad,
                         ::testing::Values("elementwise_add", "elementwise_sub",
                                           "elementwise_mul"));

TEST(KernelsGrad, Relu) {
  check_gradient({.type = "relu", .inputs = {{"X", random_tensor({3, 5}, 31, 1e-3)}}});
}

TEST(KernelsGrad, SoftmaxWithCrossEntropyHardLabel) {
  check_gradient({.type = "softmax_with_cross_entropy",
                  .inputs = {{"Logits", random_tensor({4, 5}, 41)},
                             {"Label", test::tensor<int64_t>({4, 1}, {0, 3, 4, 1})}},
                  .outputs = {"Softmax", "Loss"},
                  .objective = "Loss",
                  .wrt = {"Logits"}});
}

TEST(KernelsGrad, SoftmaxWithCrossEntropyIgnoreIndexAndAxis) {
  // Classes on axis 1 of [2, 3, 2]; one position ignored.
  check_gradient({.type = "softmax_with_cross_entropy",
                  .inputs = {{"Logits", random_tensor({2, 3, 2}, 42)},
                             {"Label", test::tensor<int64_t>({2, 1, 2}, {0, 2, -100, 1})}},
                  .outputs = {"Softmax", "Loss"},
                  .objective = "Loss",
                  .wrt = {"Logits"},
                  .attrs = {{"axis", Attribute(int32_t{1})}}});
}

TEST(KernelsGrad, SoftmaxWithCrossEntropySoftLabel) {
  // Paddle's soft-label gradient assumes each label row sums to 1.
  std::vector<double> label = test::random_values(12, 43, 0.1, 1.0);
  for (int r = 0; r < 3; ++r) {
    double s = 0;
    for (int c = 0; c < 4; ++c) s += label[r * 4 + c];
    for (int c = 0; c < 4; ++c) label[r * 4 + c] /= s;
  }
  check_gradient({.type = "softmax_with_cross_entropy",
                  .inputs = {{"Logits", random_tensor({3, 4}, 44)},
                             {"Label", test::tensor<double>({3, 4}, label)}},
                  .outputs = {"Softmax", "Loss"},
                  .objective = "Loss",
                  .wrt = {"Logits"},
                  .attrs = {{"soft_label", Attribute(true)}}});
}

TEST(KernelsGrad, Softmax) {
  check_gradient({.type = "softmax", .inputs = {{"X", random_tensor({3, 4}, 45)}}});
  check_gradient({.type = "softmax",
                  .inputs = {{"X", random_tensor({2, 3, 2}, 46)}},
                  .attrs = {{"axis", Attribute(int32_t{1})}}});
}

TEST(KernelsGrad, CrossEntropy2) {
  // Probabilities in (0.1, 1); row 2 is ignored.
  const std::vector<double> x = test::random_values(12, 47, 0.1, 1.0);
  check_gradient({.type = "cross_entropy2",
                  .inputs = {{"X", test::tensor<double>({4, 3}, x)},
                             {"Label", test::tensor<int64_t>({4, 1}, {2, 0, -100, 1})}},
                  .outputs = {"Y", "XShape", "MatchX"},
                  .objective = "Y",
                  .wrt = {"X"},
                  .grad_type = "cross_entropy_grad2"});  // Paddle's name for it
}

TEST(KernelsGrad, Mean) {
  check_gradient({.type = "mean", .inputs = {{"X", random_tensor({3, 4}, 51)}}});
}

TEST(KernelsGrad, ReduceMean) {
  using Dims = std::vector<int32_t>;
  const std::vector<std::pair<Dims, bool>> cases = {
      {{0}, false}, {{1}, true}, {{-1}, false}, {{0, 2}, false}, {{0, 2}, true}};
  for (const auto& [dims, keep] : cases) {
    SCOPED_TRACE(::testing::PrintToString(dims) + " keep_dim " + std::to_string(keep));
    check_gradient({.type = "reduce_mean",
                    .inputs = {{"X", random_tensor({2, 3, 4}, 52)}},
                    .attrs = {{"dim", Attribute(dims)}, {"keep_dim", Attribute(keep)}}});
  }
  check_gradient({.type = "reduce_mean",
                  .inputs = {{"X", random_tensor({2, 3}, 53)}},
                  .attrs = {{"dim", Attribute(Dims{0})}, {"reduce_all", Attribute(true)}}});
}

}  // namespace
}  // namespace ctp
