// 16-byte packs of elements (nvcc only): memory-bound kernels move each
// operand 16 bytes per load and store (8 FP16/BF16, 4 FP32, 2 FP64
// elements), where one element per load leaves a GPU at a fraction of its
// bandwidth (bench/RESULTS.md, sixth round). The element-wise kernels
// (packed_kernels.cu) and batch_norm's (batch_norm_kernels.cu) share them.
#pragma once
#include <algorithm>
#include <cstdint>

namespace ctp::cuda::launch::detail {

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// Elements per pack of an op over these element types: 16 bytes of the widest.
template <typename... T>
constexpr int pack_size() {
  return 16 / static_cast<int>(std::max({sizeof(T)...}));
}

template <int N, typename T>
__host__ __device__ bool aligned_for_packs(const T* p) {
  return reinterpret_cast<uintptr_t>(p) % (sizeof(T) * N) == 0;
}

}  // namespace ctp::cuda::launch::detail
