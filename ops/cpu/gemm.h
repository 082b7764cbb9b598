// Dense matrix products for the CPU kernels (mul, matmul, matmul_v2, the
// convolutions' im2col products, and their grads).
#pragma once
#include <cstdint>

namespace ctp::cpu {

// C[M,N] (+)= op(A) * op(B), all row-major. op(A) is A[M,K], or A[K,M]
// transposed when trans_a; op(B) is B[K,N], or B[N,K] transposed when
// trans_b. C is overwritten unless `accumulate`. C must not alias A or B.
// OpenBLAS computes it where the build has it (CTP_HAVE_OPENBLAS, CMake's
// CTP_WITH_OPENBLAS): faster than the loops on every product the sample
// ResNet and BERT make, 1.4x to 35x (bench/cpu_gemm_bench.cc, RESULTS.md);
// the loops below otherwise.
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
          const T* b, T* c, bool accumulate = false);

// The two ways gemm computes, for the benchmark and the tests that compare
// them: hand-written loops, and OpenBLAS's sgemm/dgemm on the calling thread.
//
// OpenBLAS runs one thread, the caller's: ctp's CPU parallelism is its
// workers (processes under `ctp launch`, device threads under --threads),
// which share the cores; OpenBLAS threads in each worker would multiply
// with them (2 workers on 2 cores would run 2 x 2 threads, each of
// OpenBLAS's spinning while it waits). Debian's pthread build is linked
// (CMakeLists.txt): it guards its shared buffers with locks, so device
// threads may call it at once, which the serial build does not allow.
template <typename T>
void gemm_loops(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
                const T* b, T* c, bool accumulate = false);
#if CTP_HAVE_OPENBLAS
template <typename T>
void gemm_openblas(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
                   const T* b, T* c, bool accumulate = false);
#endif

}  // namespace ctp::cpu
