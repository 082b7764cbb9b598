#include "ops/cpu/gemm.h"

#include <algorithm>
#include <vector>

namespace ctp::cpu {
namespace {

// Transposes rows x cols `src` into cols x rows `dst`.
template <typename T>
void transpose(const T* src, int64_t rows, int64_t cols, T* dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
}

}  // namespace

template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
          const T* b, T* c, bool accumulate) {
  // Packing transposed operands first lets one i-k-j loop, whose inner loop
  // runs over contiguous rows of B and C, serve every case.
  std::vector<T> a_packed, b_packed;
  if (trans_a) {
    a_packed.resize(static_cast<std::size_t>(m * k));
    transpose(a, k, m, a_packed.data());
    a = a_packed.data();
  }
  if (trans_b) {
    b_packed.resize(static_cast<std::size_t>(k * n));
    transpose(b, n, k, b_packed.data());
    b = b_packed.data();
  }
  if (!accumulate) std::fill(c, c + m * n, T(0));
  for (int64_t i = 0; i < m; ++i) {
    T* c_row = c + i * n;
    const T* a_row = a + i * k;
    for (int64_t p = 0; p < k; ++p) {
      const T a_ip = a_row[p];
      const T* b_row = b + p * n;
      for (int64_t j = 0; j < n; ++j) c_row[j] += a_ip * b_row[j];
    }
  }
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, const float*, const float*,
                          float*, bool);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, const double*,
                           const double*, double*, bool);

}  // namespace ctp::cpu
