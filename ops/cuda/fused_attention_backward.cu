// flash_attn_grad's fused backward (fused_attention_launch.h), in three
// kernels: a row pass D = rowsum(dO * O) (FP32, one thread a query row);
// one that gives each key tile its dK and dV, walking the query tiles; one
// that gives each query tile its dQ, walking the key tiles. Both recompute
// S = scale Q K^T and P = exp(S - lse) on the tensor cores, with
// dP = dO V^T and dS = P (dP - D) scale, as FlashAttention's backward does;
// splitting dQ from dK/dV costs a second S and dP per tile pair but needs no
// atomic adds, so the sums are in a fixed order (the same bits every run).
// P and dS are rounded to 16 bits before they multiply (dV = P^T dO,
// dK = dS^T Q, dQ = dS K), as the cuBLAS path did; no score or score
// gradient reaches memory.
#include <cmath>

#include "ops/cuda/fused_attention.cuh"

namespace ctp::cuda::launch {
namespace {

using namespace fused;
using mma::Lane;
using mma::Tile;

template <bool kBf16, int D>
__global__ void row_dot_kernel(FusedAttention a, const uint16_t* out, const uint16_t* dout,
                               float* rows) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= a.batch * a.heads * a.seq_q) return;
  // rows[] is [batch, heads, seq_q], as lse; out is [batch, seq_q, heads, D].
  const int64_t bh = r / a.seq_q, i = r % a.seq_q;
  const int64_t at = ((bh / a.heads * a.seq_q + i) * a.heads + bh % a.heads) * D;
  float sum = 0;
#pragma unroll
  for (int c = 0; c < D; c += 8) {
    const uint4 x = *reinterpret_cast<const uint4*>(out + at + c);
    const uint4 y = *reinterpret_cast<const uint4*>(dout + at + c);
    const uint32_t xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      sum += mma::widen_bits<kBf16>(static_cast<uint16_t>(xs[w])) *
             mma::widen_bits<kBf16>(static_cast<uint16_t>(ys[w]));
      sum += mma::widen_bits<kBf16>(static_cast<uint16_t>(xs[w] >> 16)) *
             mma::widen_bits<kBf16>(static_cast<uint16_t>(ys[w] >> 16));
    }
  }
  rows[r] = sum;
}

// dK and dV of 64 keys (16 a warp): for each query tile, in two halves of
// 32 queries (half the registers for S^T and dP^T, so that 3 blocks fit an
// SM), S^T = K Q^T and dP^T = V dO^T (keys x queries), P^T and dS^T from
// them, then dV += P^T dO and dK += dS^T Q. The tile's lse and D come in
// beside Q and dO.
template <bool kBf16, int D>
__global__ void __launch_bounds__(mma::kBlockThreads, 3)
    fused_dkdv_kernel(FusedAttention a, FusedAttentionGrads g) {
  __shared__ __align__(16) Tile<D> qs[2], dos[2];
  __shared__ float lse_s[2][kTileRows], rows_s[2][kTileRows];
  const BlockHead bh(a, tiles_of(a.seq_k));
  const int64_t k0 = bh.tile * kTileRows, ld = stride(a);
  const Lane l;
  const int r0 = static_cast<int>(threadIdx.x / 32) * 16;
  // K's and V's fragments stay in registers.
  uint32_t kf[D / 16][4], vf[D / 16][4];
  resident_fragments<D>(kf, qs[0], bh.rows(a.k, a, a.seq_k), k0, a.seq_k, ld, r0, l);
  resident_fragments<D>(vf, qs[0], bh.rows(a.v, a, a.seq_k), k0, a.seq_k, ld, r0, l);
  const int64_t key[2] = {k0 + r0 + l.g, k0 + r0 + l.g + 8};
  float dk[D / 8][4], dv[D / 8][4];
  mma::zero(dk);
  mma::zero(dv);
  const float* lse = g.lse + bh.bh * a.seq_q;
  const float* rows = g.rows + bh.bh * a.seq_q;
  stream_tile_pairs<D>(
      qs, dos, bh.rows(a.q, a, a.seq_q), bh.rows(g.dout, a, a.seq_q), a.seq_q, ld,
      tiles_of(a.seq_q), [&](int64_t qt) { return !tiles_hidden(a, qt * kTileRows, k0); },
      [&](const Tile<D>& q, const Tile<D>& dout, int64_t qt) {
        const int buf = &q == &qs[0] ? 0 : 1;
        const int64_t q0 = qt * kTileRows;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int c0 = 32 * half;
          float p[4][4], ds[4][4];
          product_with_rows<kBf16, D>(p, kf, q, c0);
          product_with_rows<kBf16, D>(ds, vf, dout, c0);
#pragma unroll
          for (int n = 0; n < 4; ++n)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              const int col = c0 + 8 * n + 2 * l.t + (i & 1);
              // Past the last query lse is +inf and D 0: P and dS are 0.
              const bool hidden = causal_hidden(a, q0 + col, key[i >> 1]);
              const float pv = hidden ? 0.0f : __expf(p[n][i] * a.scale - lse_s[buf][col]);
              p[n][i] = pv;
              ds[n][i] = pv * (ds[n][i] - rows_s[buf][col]) * a.scale;
            }
          accumulate_times_tile<kBf16, D>(dv, p, dout, c0);
          accumulate_times_tile<kBf16, D>(dk, ds, q, c0);
        }
      },
      [&](int buf, int64_t qt) {
        const int64_t q0 = qt * kTileRows;
        mma::load_floats_async(lse_s[buf], lse + q0, a.seq_q - q0, INFINITY);
        mma::load_floats_async(rows_s[buf], rows + q0, a.seq_q - q0, 0.0f);
      });
  const float one[2] = {1.0f, 1.0f};
  if (g.dk) mma::store_rows<kBf16>(bh.rows(g.dk, a, a.seq_k), ld, key, a.seq_k, dk, one, l);
  if (g.dv) mma::store_rows<kBf16>(bh.rows(g.dv, a, a.seq_k), ld, key, a.seq_k, dv, one, l);
}

// dQ of 64 queries (16 a warp): for each key tile, S = Q K^T and
// dP = dO V^T, P and dS from them, then dQ += dS K.
template <bool kBf16, int D>
__global__ void __launch_bounds__(mma::kBlockThreads, 3)
    fused_dq_kernel(FusedAttention a, FusedAttentionGrads g) {
  __shared__ __align__(16) Tile<D> ks[2], vs[2];
  const BlockHead bh(a, tiles_of(a.seq_q));
  const int64_t q0 = bh.tile * kTileRows, ld = stride(a);
  const Lane l;
  const int r0 = static_cast<int>(threadIdx.x / 32) * 16;
  uint32_t qf[D / 16][4], dof[D / 16][4];
  resident_fragments<D>(qf, ks[0], bh.rows(a.q, a, a.seq_q), q0, a.seq_q, ld, r0, l);
  resident_fragments<D>(dof, ks[0], bh.rows(g.dout, a, a.seq_q), q0, a.seq_q, ld, r0, l);
  const int64_t row[2] = {q0 + r0 + l.g, q0 + r0 + l.g + 8};
  float row_lse[2], row_d[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const bool in = row[r] < a.seq_q;
    row_lse[r] = in ? g.lse[bh.bh * a.seq_q + row[r]] : INFINITY;
    row_d[r] = in ? g.rows[bh.bh * a.seq_q + row[r]] : 0.0f;
  }
  float dq[D / 8][4];
  mma::zero(dq);
  stream_tile_pairs<D>(
      ks, vs, bh.rows(a.k, a, a.seq_k), bh.rows(a.v, a, a.seq_k), a.seq_k, ld,
      visible_key_tiles(a, q0), [](int64_t) { return true; },
      [&](const Tile<D>& k, const Tile<D>& v, int64_t kt) {
        const int64_t k0 = kt * kTileRows;
        float p[8][4], ds[8][4];
        product_with_rows<kBf16, D>(p, qf, k);
        product_with_rows<kBf16, D>(ds, dof, v);
#pragma unroll
        for (int n = 0; n < 8; ++n)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int64_t key = k0 + 8 * n + 2 * l.t + (i & 1);
            const int r = i >> 1;
            const bool hidden = key >= a.seq_k || causal_hidden(a, row[r], key);
            const float pv = hidden ? 0.0f : __expf(p[n][i] * a.scale - row_lse[r]);
            ds[n][i] = pv * (ds[n][i] - row_d[r]) * a.scale;
          }
        accumulate_times_tile<kBf16, D>(dq, ds, k);
      });
  const float one[2] = {1.0f, 1.0f};
  mma::store_rows<kBf16>(bh.rows(g.dq, a, a.seq_q), ld, row, a.seq_q, dq, one, l);
}

template <bool kBf16, int D>
void launch_backward(const FusedAttention& a, const FusedAttentionGrads& g, Stream s) {
  const int64_t rows = a.batch * a.heads * a.seq_q;
  row_dot_kernel<kBf16, D>
      <<<static_cast<unsigned>((rows + 255) / 256), 256, 0, s>>>(a, g.out, g.dout, g.rows);
  const int64_t heads = a.batch * a.heads;
  if (g.dk || g.dv)
    fused_dkdv_kernel<kBf16, D><<<static_cast<unsigned>(heads * tiles_of(a.seq_k)),
                                  mma::kBlockThreads, 0, s>>>(a, g);
  if (g.dq)
    fused_dq_kernel<kBf16, D><<<static_cast<unsigned>(heads * tiles_of(a.seq_q)),
                                mma::kBlockThreads, 0, s>>>(a, g);
}

}  // namespace

void fused_attention_backward(const FusedAttention& a, const FusedAttentionGrads& g, Stream s) {
  if (a.bf16) {
    if (a.head_dim == 32) launch_backward<true, 32>(a, g, s);
    else launch_backward<true, 64>(a, g, s);
  } else {
    if (a.head_dim == 32) launch_backward<false, 32>(a, g, s);
    else launch_backward<false, 64>(a, g, s);
  }
}

}  // namespace ctp::cuda::launch
