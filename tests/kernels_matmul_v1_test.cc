// matmul (Paddle's v1) on the CPU: values by hand (alpha, transpose_X /
// transpose_Y, two vectors giving [1]), the refused attributes, and its
// gradients against finite differences.
#include <gtest/gtest.h>

#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::make_op;
using test::run_op;
using test::tensor;
using test::values;
using Shape = std::vector<int64_t>;

Op matmul_op(std::vector<NamedAttribute> attrs) {
  return make_op("matmul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}}, std::move(attrs));
}

TEST(KernelsMatmulV1, AlphaAndTransposesByHand) {
  Scope s;
  // [[1, 2], [3, 4]] times [[5, 6], [7, 8]] = [[19, 22], [43, 50]].
  s.var("x") = tensor<double>({2, 2}, {1, 2, 3, 4});
  s.var("y") = tensor<double>({2, 2}, {5, 6, 7, 8});
  run_op(s, matmul_op({}));
  EXPECT_EQ(values<double>(s.get("out")), (std::vector<double>{19, 22, 43, 50}));
  run_op(s, matmul_op({{"alpha", Attribute(0.5f)}}));
  EXPECT_EQ(values<double>(s.get("out")), (std::vector<double>{9.5, 11, 21.5, 25}));
  // X^T Y: [[1, 3], [2, 4]] times Y = [[26, 30], [38, 44]].
  run_op(s, matmul_op({{"transpose_X", Attribute(true)}}));
  EXPECT_EQ(values<double>(s.get("out")), (std::vector<double>{26, 30, 38, 44}));
  // X Y^T: [[17, 23], [39, 53]].
  run_op(s, matmul_op({{"transpose_Y", Attribute(true)}}));
  EXPECT_EQ(values<double>(s.get("out")), (std::vector<double>{17, 23, 39, 53}));
  // Batched X against one Y: [2, 1, 2] x [2, 2] -> [2, 1, 2].
  s.var("x") = tensor<double>({2, 1, 2}, {1, 0, 0, 1});
  run_op(s, matmul_op({}));
  EXPECT_EQ(s.get("out").shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(values<double>(s.get("out")), (std::vector<double>{5, 6, 7, 8}));
  // Two vectors: a dot product of shape [1] (v1's; matmul_v2 gives 0-D).
  s.var("x") = tensor<double>({3}, {1, 2, 3});
  s.var("y") = tensor<double>({3}, {4, 5, 6});
  run_op(s, matmul_op({{"alpha", Attribute(2.0f)}}));
  EXPECT_EQ(s.get("out").shape(), (Shape{1}));
  EXPECT_EQ(values<double>(s.get("out")), (std::vector<double>{64}));
}

TEST(KernelsMatmulV1, MultiHeadAndOneDnnFusionsAreRefused) {
  Scope s;
  s.var("x") = tensor<double>({2, 2}, {1, 2, 3, 4});
  s.var("y") = tensor<double>({2, 2}, {5, 6, 7, 8});
  try {
    run_op(s, matmul_op({{"head_number", Attribute(int32_t{2})}}));
    FAIL() << "head_number 2 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head_number 2 is not supported"), std::string::npos)
        << e.what();
  }
  try {
    run_op(s, matmul_op({{"fused_reshape_Out", Attribute(std::vector<int32_t>{0, 4})}}));
    FAIL() << "fused_reshape_Out accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fused_reshape_Out (a oneDNN fusion)"),
              std::string::npos)
        << e.what();
  }
}

TEST(KernelsMatmulV1, GradientsMatchFiniteDifferences) {
  test::check_gradient({.type = "matmul",
                        .inputs = {{"X", test::random_tensor({2, 3, 4}, 81)},
                                   {"Y", test::random_tensor({5, 4}, 82)}},
                        .wrt = {"X", "Y"},
                        .attrs = {{"transpose_Y", Attribute(true)}, {"alpha", Attribute(0.5f)}}});
  test::check_gradient({.type = "matmul",
                        .inputs = {{"X", test::random_tensor({4, 3}, 83)},
                                   {"Y", test::random_tensor({4, 2}, 84)}},
                        .wrt = {"X", "Y"},
                        .attrs = {{"transpose_X", Attribute(true)}, {"alpha", Attribute(3.0f)}}});
}

}  // namespace
}  // namespace ctp
