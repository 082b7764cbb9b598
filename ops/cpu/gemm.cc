#include "ops/cpu/gemm.h"

#if CTP_HAVE_OPENBLAS
#include <cblas.h>
#include <dlfcn.h>
#endif

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "program_ir/error.h"

namespace ctp::cpu {
namespace {

// Transposes rows x cols `src` into cols x rows `dst`.
template <typename T>
void transpose(const T* src, int64_t rows, int64_t cols, T* dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
}

#if CTP_HAVE_OPENBLAS
// OpenBLAS is loaded by the first product, not with ctp's libraries: loading
// it starts its thread pool, whose threads spin for a while, and a process
// that never multiplies (ctp transpile, dump, verify) should not pay for
// that (bench/RESULTS.md). It then runs on the calling thread only (gemm.h
// says why): the library's own default is a thread per core.
struct OpenBlas {
  decltype(&cblas_sgemm) sgemm;
  decltype(&cblas_dgemm) dgemm;
};

template <typename F>
F symbol(void* library, const char* name) {
  void* address = ::dlsym(library, name);
  if (!address)
    throw Error(std::string("OpenBLAS (" CTP_OPENBLAS_LIBRARY ") has no ") + name);
  return reinterpret_cast<F>(address);
}

const OpenBlas& openblas() {
  static const OpenBlas loaded = [] {
    void* library = ::dlopen(CTP_OPENBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!library)
      throw Error(std::string("cannot load OpenBLAS (" CTP_OPENBLAS_LIBRARY "): ") + ::dlerror());
    symbol<decltype(&openblas_set_num_threads)>(library, "openblas_set_num_threads")(1);
    return OpenBlas{symbol<decltype(&cblas_sgemm)>(library, "cblas_sgemm"),
                    symbol<decltype(&cblas_dgemm)>(library, "cblas_dgemm")};
  }();
  return loaded;
}

void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k,
               const float* a, blasint lda, const float* b, blasint ldb, float beta, float* c) {
  openblas().sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, n);
}
void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k,
               const double* a, blasint lda, const double* b, blasint ldb, double beta,
               double* c) {
  openblas().dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, n);
}

#endif

}  // namespace

template <typename T>
void gemm_loops(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
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

#if CTP_HAVE_OPENBLAS
template <typename T>
void gemm_openblas(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
                   const T* b, T* c, bool accumulate) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS leaves C alone when K is 0, as beta 1 would
    if (!accumulate) std::fill(c, c + m * n, T(0));
    return;
  }
  // BLAS takes 32-bit sizes (Debian's build): larger products stay on the loops.
  constexpr int64_t kMaxBlas = std::numeric_limits<blasint>::max();
  if (m > kMaxBlas || n > kMaxBlas || k > kMaxBlas)
    return gemm_loops(trans_a, trans_b, m, n, k, a, b, c, accumulate);
  // Row-major leading dimensions: the stored row lengths.
  blas_gemm(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
            static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), a,
            static_cast<blasint>(trans_a ? m : k), b, static_cast<blasint>(trans_b ? k : n),
            accumulate ? T(1) : T(0), c);
}

#endif

template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, const T* b,
          T* c, bool accumulate) {
#if CTP_HAVE_OPENBLAS
  gemm_openblas(trans_a, trans_b, m, n, k, a, b, c, accumulate);
#else
  gemm_loops(trans_a, trans_b, m, n, k, a, b, c, accumulate);
#endif
}

#if CTP_HAVE_OPENBLAS
#define CTP_INSTANTIATE_GEMM_OPENBLAS(T)                                                    \
  template void gemm_openblas<T>(bool, bool, int64_t, int64_t, int64_t, const T*, const T*, \
                                 T*, bool);
#else
#define CTP_INSTANTIATE_GEMM_OPENBLAS(T)
#endif
#define CTP_INSTANTIATE_GEMM(T)                                                              \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, const T*, const T*, T*, bool); \
  template void gemm_loops<T>(bool, bool, int64_t, int64_t, int64_t, const T*, const T*, T*,  \
                              bool);                                                         \
  CTP_INSTANTIATE_GEMM_OPENBLAS(T)
CTP_INSTANTIATE_GEMM(float)
CTP_INSTANTIATE_GEMM(double)
#undef CTP_INSTANTIATE_GEMM
#undef CTP_INSTANTIATE_GEMM_OPENBLAS

}  // namespace ctp::cpu
