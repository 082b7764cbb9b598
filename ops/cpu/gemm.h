// Dense matrix products for the CPU kernels (mul, matmul_v2 and their grads).
#pragma once
#include <cstdint>

namespace ctp::cpu {

// C[M,N] (+)= op(A) * op(B), all row-major. op(A) is A[M,K], or A[K,M]
// transposed when trans_a; op(B) is B[K,N], or B[N,K] transposed when
// trans_b. C is overwritten unless `accumulate`. C must not alias A or B.
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
          const T* b, T* c, bool accumulate = false);

}  // namespace ctp::cpu
