// What the fused attention kernels share (nvcc only): which (batch index,
// head) and 64-row tile a block works on, where that head's rows lie, and
// the causal mask (meta_attention.h: key j hidden from query i when
// j > i + seq_k - seq_q, bottom-right aligned).
#pragma once
#include <cstdint>

#include "ops/cuda/fused_attention_launch.h"
#include "ops/cuda/mma_tile.cuh"

namespace ctp::cuda::launch::fused {

using mma::kTileRows;

__host__ __device__ inline int64_t tiles_of(int64_t rows) {
  return (rows + kTileRows - 1) / kTileRows;
}

// Block b of a grid of heads x tiles: tile b % tiles of (batch index, head)
// b / tiles, so consecutive blocks share a head's K and V in L2.
struct BlockHead {
  int64_t bh, b, h, tile;
  __device__ BlockHead(const FusedAttention& a, int64_t tiles) {
    bh = static_cast<int64_t>(blockIdx.x) / tiles;
    tile = static_cast<int64_t>(blockIdx.x) % tiles;
    b = bh / a.heads;
    h = bh % a.heads;
  }
  // Row 0 of this head in a [batch, seq, heads, head_dim] tensor; row r is
  // r * stride() further on.
  __device__ const uint16_t* rows(const uint16_t* base, const FusedAttention& a,
                                  int64_t seq) const {
    return base + (b * seq * a.heads + h) * a.head_dim;
  }
  __device__ uint16_t* rows(uint16_t* base, const FusedAttention& a, int64_t seq) const {
    return base + (b * seq * a.heads + h) * a.head_dim;
  }
};

__device__ inline int64_t stride(const FusedAttention& a) { return a.heads * a.head_dim; }

__device__ inline bool causal_hidden(const FusedAttention& a, int64_t query, int64_t key) {
  return a.causal && key > query + a.seq_k - a.seq_q;
}

// Key tiles that some query of the tile starting at q0 sees: [0, result).
__device__ inline int64_t visible_key_tiles(const FusedAttention& a, int64_t q0) {
  const int64_t all = tiles_of(a.seq_k);
  if (!a.causal) return all;
  const int64_t last_query = q0 + kTileRows - 1 < a.seq_q ? q0 + kTileRows - 1 : a.seq_q - 1;
  const int64_t last_key = last_query + a.seq_k - a.seq_q;
  if (last_key < 0) return 0;
  return last_key / kTileRows + 1 < all ? last_key / kTileRows + 1 : all;
}

// Whether no query of the tile at q0 sees any key of the tile at k0.
__device__ inline bool tiles_hidden(const FusedAttention& a, int64_t q0, int64_t k0) {
  if (!a.causal) return false;
  const int64_t last_query = q0 + kTileRows - 1 < a.seq_q ? q0 + kTileRows - 1 : a.seq_q - 1;
  return k0 > last_query + a.seq_k - a.seq_q;
}

// Double-buffered tiles of two matrices x and y, rows t * 64 .. of tile t,
// for the tiles t < count where keep(t): tile t's copies are issued before
// tile t - 1 is worked on, so they overlap it; body(x tile, y tile, t) runs
// for each kept t in order, between barriers (it may read the tiles only).
// Every thread of the block calls it (keep must agree across the block).
// load_more(buf, t) may issue further copies of tile t into buffer buf.
template <int D, typename Keep, typename Body, typename More>
__device__ inline void stream_tile_pairs(mma::Tile<D> (&xs)[2], mma::Tile<D> (&ys)[2],
                                         const uint16_t* x, const uint16_t* y, int64_t rows,
                                         int64_t ld, int64_t count, Keep keep, Body body,
                                         More load_more) {
  const auto next_kept = [&](int64_t t) {
    while (t < count && !keep(t)) ++t;
    return t;
  };
  const auto load = [&](int buf, int64_t t) {
    mma::load_tile_async<D>(xs[buf], x, t * kTileRows, rows, ld);
    mma::load_tile_async<D>(ys[buf], y, t * kTileRows, rows, ld);
    load_more(buf, t);
  };
  int64_t next = next_kept(0);
  if (next < count) load(0, next);
  mma::commit_tiles();
  for (int buf = 0; next < count; buf ^= 1) {
    const int64_t t = next;
    next = next_kept(t + 1);
    if (next < count) load(buf ^ 1, next);
    mma::commit_tiles();  // an empty group at the end: wait_tiles<1> still holds
    mma::wait_tiles<1>();
    __syncthreads();
    body(xs[buf], ys[buf], t);
    __syncthreads();  // the next load overwrites this buffer
  }
}

template <int D, typename Keep, typename Body>
__device__ inline void stream_tile_pairs(mma::Tile<D> (&xs)[2], mma::Tile<D> (&ys)[2],
                                         const uint16_t* x, const uint16_t* y, int64_t rows,
                                         int64_t ld, int64_t count, Keep keep, Body body) {
  stream_tile_pairs<D>(xs, ys, x, y, rows, ld, count, keep, body, [](int, int64_t) {});
}

// The A fragments of a warp's 16 rows (r0 ..) of one matrix's tile at row0,
// loaded through `tile` (which the caller may reuse after this returns).
template <int D>
__device__ inline void resident_fragments(uint32_t (&f)[D / 16][4], mma::Tile<D>& tile,
                                          const uint16_t* base, int64_t row0, int64_t rows,
                                          int64_t ld, int r0, mma::Lane l) {
  mma::load_tile_async<D>(tile, base, row0, rows, ld);
  mma::commit_tiles();
  mma::wait_tiles<0>();
  __syncthreads();
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) mma::load_a<D>(f[kk], tile, r0, 16 * kk, l);
  __syncthreads();
}

// c[n] = A B over a 16 x 8N product: A a warp's fragments (16 rows x D),
// B[k][n] = tile[row0 + n][k] (tile rows row0 .. row0 + 8N - 1 are the
// product's columns).
template <bool kBf16, int D, int N>
__device__ inline void product_with_rows(float (&c)[N][4], const uint32_t (&a)[D / 16][4],
                                         const mma::Tile<D>& tile, int row0 = 0) {
  mma::zero(c);
  // k outermost: consecutive products go to different accumulators.
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
    for (int n = 0; n < N; n += 2) {
      uint32_t b[4];
      mma::load_b_rows_x2<D>(b, tile, row0 + 8 * n, 16 * kk);
      mma::mma<kBf16>(c[n], a[kk], b[0], b[1]);
      mma::mma<kBf16>(c[n + 1], a[kk], b[2], b[3]);
    }
}

// acc[n] += X tile: X the 16 x 8N product held in c (rounded to 16 bits),
// times tile rows row0 .. row0 + 8N - 1 (D columns).
template <bool kBf16, int D, int N>
__device__ inline void accumulate_times_tile(float (&acc)[D / 8][4], const float (&c)[N][4],
                                             const mma::Tile<D>& tile, int row0 = 0) {
#pragma unroll
  for (int kc = 0; kc < N / 2; ++kc) {
    uint32_t x[4];
    mma::a_from_c<kBf16>(x, c, kc);
#pragma unroll
    for (int n = 0; n < D / 8; n += 2) {
      uint32_t b[4];
      mma::load_b_cols_x2<D>(b, tile, row0 + 16 * kc, 8 * n);
      mma::mma<kBf16>(acc[n], x, b[0], b[1]);
      mma::mma<kBf16>(acc[n + 1], x, b[2], b[3]);
    }
  }
}

// The two rows max (r = 0: g, 1: g + 8) of the 4 lanes that share them.
__device__ inline float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ inline float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

}  // namespace ctp::cuda::launch::fused
