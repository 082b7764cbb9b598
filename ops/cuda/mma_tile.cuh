// Warp-level 16-bit matrix products for the fused attention kernels (nvcc
// only): the tensor cores' mma.sync m16n8k16 (FP16 or BF16 operands, FP32
// accumulators, sm_80 and later) on 64-row tiles kept in shared memory.
//
// Fragments follow the PTX ISA's layout for m16n8k16. In a warp, lane =
// 4 * g + t (g = lane / 4, t = lane % 4):
//   A (16 x 16, row-major): reg 0 = (row g, cols 2t, 2t+1), reg 1 = (row g+8,
//     same cols), reg 2 = (row g, cols 2t+8, 2t+9), reg 3 = (row g+8, those);
//   B (16 x 8): reg 0 = (rows 2t, 2t+1; col g), reg 1 = (rows 2t+8, 2t+9; col g);
//   C (16 x 8, FP32): c0, c1 = (row g, cols 2t, 2t+1), c2, c3 = (row g+8, same).
// So the accumulators of two adjacent 16 x 8 products are, packed to 16 bits,
// the A fragment of the next product (FlashAttention's P times V without
// leaving registers): a_from_c below.
//
// Tiles are kTileRows rows of D 16-bit elements, each row padded by 8
// elements: with a row stride of D + 8 elements, the 32-bit reads of an A
// fragment (4g + t words apart) and ldmatrix's 16-byte rows fall in
// distinct banks for D = 32, 64.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace ctp::cuda::launch::mma {

constexpr int kTileRows = 64;  // rows of a tile; 16 per warp
constexpr int kWarps = kTileRows / 16;
constexpr int kBlockThreads = 32 * kWarps;

template <int D>
using Tile = uint16_t[kTileRows][D + 8];

// The lane's (g, t) of the fragment layouts above.
struct Lane {
  int g, t;
  __device__ Lane()
      : g(static_cast<int>(threadIdx.x % 32) / 4), t(static_cast<int>(threadIdx.x % 4)) {}
};

// c += a b, 16-bit operands (kBf16: BF16, else FP16), FP32 sums.
// Not volatile: the compiler may interleave independent products (each
// depends on its accumulator through "+f"), which hides the tensor cores'
// latency. Built for sm_75 too (the build's default architecture), where no such
// instruction exists: there it traps, and fused_attention_supported keeps
// the op from launching that code.
template <bool kBf16>
__device__ inline void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  (void)c, (void)a, (void)b0, (void)b1;
  __trap();
#else
  if constexpr (kBf16)
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// Two floats rounded (nearest even) to 16 bits, lo in the low half.
template <bool kBf16>
__device__ inline uint32_t pack(float lo, float hi) {
  if constexpr (kBf16) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

template <bool kBf16>
__device__ inline float widen_bits(uint16_t bits) {
  if constexpr (kBf16) return __uint_as_float(static_cast<uint32_t>(bits) << 16);
  else return __half2float(__ushort_as_half(bits));
}

__device__ inline uint32_t load32(const uint16_t* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// Rows [row0, row0 + kTileRows) of a matrix whose row r starts at
// base + r * stride (16-byte aligned), zeros past `rows`, copied into the
// tile without passing through registers (cp.async, sm_80): the copy runs
// while the warps compute on the other tile of a double buffer. D / 8
// threads a row, 16 bytes each; a row past the end copies 0 bytes and fills
// zeros. Completes at wait_tiles().
template <int D>
__device__ inline void load_tile_async(Tile<D>& tile, const uint16_t* base, int64_t row0,
                                       int64_t rows, int64_t stride) {
  constexpr int kPerRow = D / 8;
  for (int i = static_cast<int>(threadIdx.x); i < kTileRows * kPerRow; i += kBlockThreads) {
    const int r = i / kPerRow, c = (i % kPerRow) * 8;
    const bool in = row0 + r < rows;
    const uint16_t* from = in ? base + (row0 + r) * stride + c : base;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    *reinterpret_cast<uint4*>(&tile[r][c]) =
        in ? *reinterpret_cast<const uint4*>(from) : make_uint4(0, 0, 0, 0);
#else
    const auto to = static_cast<uint32_t>(__cvta_generic_to_shared(&tile[r][c]));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(from),
                 "r"(in ? 16 : 0));
#endif
  }
}

// n <= kTileRows floats from[0 .. n) into to[0 .. n), `fill` past n, as
// part of the copies of a tile (4-byte cp.async, one thread an element).
__device__ inline void load_floats_async(float* to, const float* from, int64_t n, float fill) {
  for (int i = static_cast<int>(threadIdx.x); i < kTileRows; i += kBlockThreads) {
    if (i >= n) {
      to[i] = fill;
      continue;
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    to[i] = from[i];
#else
    const auto at = static_cast<uint32_t>(__cvta_generic_to_shared(to + i));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(at), "l"(from + i));
#endif
  }
}

// Closes the group of copies issued since the last call.
__device__ inline void commit_tiles() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits for this thread's copies but the last `pending` groups; a
// __syncthreads() after it makes every thread's copies visible.
template <int pending>
__device__ inline void wait_tiles() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
#endif
}

// The A fragment of tile rows r0 .. r0 + 15, columns k0 .. k0 + 15.
template <int D>
__device__ inline void load_a(uint32_t (&a)[4], const Tile<D>& tile, int r0, int k0, Lane l) {
  a[0] = load32(&tile[r0 + l.g][k0 + 2 * l.t]);
  a[1] = load32(&tile[r0 + l.g + 8][k0 + 2 * l.t]);
  a[2] = load32(&tile[r0 + l.g][k0 + 2 * l.t + 8]);
  a[3] = load32(&tile[r0 + l.g + 8][k0 + 2 * l.t + 8]);
}

// Four 8 x 8 matrices of 16-bit elements from shared memory (ldmatrix,
// sm_75): lane i gives the address of row i % 8 of matrix i / 8; r[m] gets
// matrix m's (row g, cols 2t, 2t+1), or with kTrans its (rows 2t, 2t+1,
// col g) -- B fragments with no per-element loads. 16-byte rows 144 (D 64)
// or 80 (D 32) bytes apart hit distinct banks.
template <bool kTrans>
__device__ inline void ldmatrix_x4(uint32_t (&r)[4], const uint16_t* row) {
  const auto at = static_cast<uint32_t>(__cvta_generic_to_shared(row));
  if constexpr (kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(at));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(at));
}

// The B fragments (b[0], b[1]: columns n0 .. n0 + 7; b[2], b[3]: n0 + 8 ..
// n0 + 15) of B[k][n] = tile[n0 + n][k0 + k]: the tile's rows are B's
// columns (K in Q K^T).
template <int D>
__device__ inline void load_b_rows_x2(uint32_t (&b)[4], const Tile<D>& tile, int n0, int k0) {
  const int lane = static_cast<int>(threadIdx.x % 32), m = lane / 8;
  ldmatrix_x4<false>(b, &tile[n0 + (m >> 1) * 8 + lane % 8][k0 + (m & 1) * 8]);
}

// The same for B[k][n] = tile[k0 + k][n0 + n]: the tile as it is (V in P V).
template <int D>
__device__ inline void load_b_cols_x2(uint32_t (&b)[4], const Tile<D>& tile, int k0, int n0) {
  const int lane = static_cast<int>(threadIdx.x % 32), m = lane / 8;
  ldmatrix_x4<true>(b, &tile[k0 + (m & 1) * 8 + lane % 8][n0 + (m >> 1) * 8]);
}

// The A fragment of columns 16 kc .. 16 kc + 15 of a 16-row product held as
// 16 x 8 accumulators c[n] (columns 8n .. 8n + 7), rounded to 16 bits.
template <bool kBf16, int N>
__device__ inline void a_from_c(uint32_t (&a)[4], const float (&c)[N][4], int kc) {
  a[0] = pack<kBf16>(c[2 * kc][0], c[2 * kc][1]);
  a[1] = pack<kBf16>(c[2 * kc][2], c[2 * kc][3]);
  a[2] = pack<kBf16>(c[2 * kc + 1][0], c[2 * kc + 1][1]);
  a[3] = pack<kBf16>(c[2 * kc + 1][2], c[2 * kc + 1][3]);
}

template <int N>
__device__ inline void zero(float (&c)[N][4]) {
#pragma unroll
  for (int n = 0; n < N; ++n) c[n][0] = c[n][1] = c[n][2] = c[n][3] = 0.0f;
}

// Rows r (0: g, 1: g + 8) of a warp's 16 x (8 N) accumulators, scaled by
// `factor[r]`, written at out + row[r] * stride as 16-bit pairs; rows at or
// past `rows` are not written.
template <bool kBf16, int N>
__device__ inline void store_rows(uint16_t* out, int64_t stride, const int64_t (&row)[2],
                                  int64_t rows, const float (&c)[N][4], const float (&factor)[2],
                                  Lane l) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (row[r] >= rows) continue;
    uint16_t* p = out + row[r] * stride + 2 * l.t;
#pragma unroll
    for (int n = 0; n < N; ++n)
      *reinterpret_cast<uint32_t*>(p + 8 * n) =
          pack<kBf16>(c[n][2 * r] * factor[r], c[n][2 * r + 1] * factor[r]);
  }
}

}  // namespace ctp::cuda::launch::mma
