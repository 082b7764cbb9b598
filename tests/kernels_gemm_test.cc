// The CPU matrix product (ops/cpu/gemm.h): OpenBLAS, which the kernels call,
// against the hand-written loops on every transpose combination, with and
// without accumulating, and on empty products.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "ops/cpu/gemm.h"

namespace ctp {
namespace {

std::vector<double> random_values(std::size_t n, unsigned seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = uniform(engine);
  return v;
}

TEST(KernelsGemm, OpenBlasGivesTheLoopsProducts) {
#if !CTP_HAVE_OPENBLAS
  GTEST_SKIP() << "built without OpenBLAS (CTP_WITH_OPENBLAS): gemm is the loops";
#endif
  const int64_t m = 7, n = 5, k = 9;
  const std::vector<double> a = random_values(m * k, 1), b = random_values(k * n, 2);
  for (const bool ta : {false, true})
    for (const bool tb : {false, true})
      for (const bool accumulate : {false, true}) {
        SCOPED_TRACE(std::to_string(ta) + std::to_string(tb) + std::to_string(accumulate));
        std::vector<double> loops = random_values(m * n, 3), blas = loops;
        cpu::gemm_loops<double>(ta, tb, m, n, k, a.data(), b.data(), loops.data(), accumulate);
        cpu::gemm<double>(ta, tb, m, n, k, a.data(), b.data(), blas.data(), accumulate);
        for (std::size_t i = 0; i < loops.size(); ++i) EXPECT_NEAR(blas[i], loops[i], 1e-12) << i;
      }
  // FP32 too, within its rounding.
  std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end());
  std::vector<float> loops(m * n), blas(m * n);
  cpu::gemm_loops<float>(true, false, m, n, k, af.data(), bf.data(), loops.data());
  cpu::gemm<float>(true, false, m, n, k, af.data(), bf.data(), blas.data());
  for (std::size_t i = 0; i < loops.size(); ++i) EXPECT_NEAR(blas[i], loops[i], 1e-5) << i;
}

// K = 0 is a sum of nothing: C becomes 0, or stays as it is when accumulating.
TEST(KernelsGemm, EmptyProducts) {
  std::vector<double> c = {1, 2, 3, 4};
  cpu::gemm<double>(false, false, 2, 2, 0, nullptr, nullptr, c.data(), true);
  EXPECT_EQ(c, (std::vector<double>{1, 2, 3, 4}));
  cpu::gemm<double>(false, false, 2, 2, 0, nullptr, nullptr, c.data());
  EXPECT_EQ(c, (std::vector<double>{0, 0, 0, 0}));
  cpu::gemm<double>(false, false, 0, 2, 3, nullptr, nullptr, c.data());  // no rows: nothing
}

}  // namespace
}  // namespace ctp
