// flash_attn's fused forward (fused_attention_launch.h): a block of 4 warps
// takes 64 queries of one (batch index, head), 16 a warp, and walks the key
// tiles of 64 (double-buffered: the next K and V tiles are copied while the
// warps work on these). Per tile: S = scale Q K^T on the tensor cores into FP32
// registers, the online softmax (each row's running max m and sum l; the
// output so far rescaled by exp(m_old - m_new) when the max grows), then
// O += P V with P rounded to 16 bits straight from S's registers
// (mma_tile.cuh's a_from_c). At the end out = O / l and lse = m + log l.
// Nothing per score reaches memory: where the cuBLAS path wrote and re-read
// 128 MiB of FP32 scores per BERT-large layer, this reads q, k, v and writes
// out and lse.
#include <cmath>

#include "ops/cuda/fused_attention.cuh"

namespace ctp::cuda::launch {
namespace {

using namespace fused;
using mma::Lane;
using mma::Tile;

// One warp's running softmax over its two rows (r = 0: g, 1: g + 8).
struct RowState {
  float max[2] = {-INFINITY, -INFINITY};
  float sum[2] = {0.0f, 0.0f};  // this lane's part; the quad's sum at the end
};

// S (16 x 64, scaled, hidden keys at -inf) -> P = exp(S - m_new) in place;
// returns through `rescale` each row's exp(m_old - m_new) for O.
__device__ inline void online_softmax(float (&s)[8][4], RowState& st, float (&rescale)[2]) {
  float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int i = 0; i < 4; ++i) tile_max[i >> 1] = fmaxf(tile_max[i >> 1], s[n][i]);
  float base[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float m = fmaxf(st.max[r], quad_max(tile_max[r]));
    // A row that has seen only hidden keys keeps m = -inf: subtract 0 so
    // that its exponentials are exp(-inf) = 0, not NaN.
    base[r] = m == -INFINITY ? 0.0f : m;
    rescale[r] = st.max[r] == -INFINITY ? 0.0f : __expf(st.max[r] - m);
    st.max[r] = m;
    st.sum[r] *= rescale[r];
  }
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      s[n][i] = __expf(s[n][i] - base[i >> 1]);
      st.sum[i >> 1] += s[n][i];
    }
}

template <bool kBf16, int D>
__global__ void __launch_bounds__(mma::kBlockThreads)
    fused_forward_kernel(FusedAttention a, uint16_t* out, float* lse) {
  __shared__ __align__(16) Tile<D> ks[2], vs[2];
  const BlockHead bh(a, tiles_of(a.seq_q));
  const int64_t q0 = bh.tile * kTileRows, ld = stride(a);
  const Lane l;
  const int r0 = static_cast<int>(threadIdx.x / 32) * 16;
  uint32_t qf[D / 16][4];
  resident_fragments<D>(qf, ks[0], bh.rows(a.q, a, a.seq_q), q0, a.seq_q, ld, r0, l);
  const int64_t row[2] = {q0 + r0 + l.g, q0 + r0 + l.g + 8};
  float o[D / 8][4];
  mma::zero(o);
  RowState st;
  stream_tile_pairs<D>(
      ks, vs, bh.rows(a.k, a, a.seq_k), bh.rows(a.v, a, a.seq_k), a.seq_k, ld,
      visible_key_tiles(a, q0), [](int64_t) { return true; },
      [&](const Tile<D>& k, const Tile<D>& v, int64_t kt) {
        const int64_t k0 = kt * kTileRows;
        float s[8][4];
        product_with_rows<kBf16, D>(s, qf, k);
#pragma unroll
        for (int n = 0; n < 8; ++n)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int64_t key = k0 + 8 * n + 2 * l.t + (i & 1);
            const bool hidden = key >= a.seq_k || causal_hidden(a, row[i >> 1], key);
            s[n][i] = hidden ? -INFINITY : s[n][i] * a.scale;
          }
        float rescale[2];
        online_softmax(s, st, rescale);
#pragma unroll
        for (int n = 0; n < D / 8; ++n)
#pragma unroll
          for (int i = 0; i < 4; ++i) o[n][i] *= rescale[i >> 1];
        accumulate_times_tile<kBf16, D>(o, s, v);
      });
  float inverse[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float sum = quad_sum(st.sum[r]);
    // No visible key: out 0 and lse +inf (meta_attention.h).
    inverse[r] = sum > 0 ? 1.0f / sum : 0.0f;
    if (l.t == 0 && row[r] < a.seq_q)
      lse[bh.bh * a.seq_q + row[r]] = sum > 0 ? st.max[r] + logf(sum) : INFINITY;
  }
  mma::store_rows<kBf16>(bh.rows(out, a, a.seq_q), ld, row, a.seq_q, o, inverse, l);
}

template <bool kBf16, int D>
void launch_forward(const FusedAttention& a, uint16_t* out, float* lse, Stream s) {
  const int64_t blocks = a.batch * a.heads * tiles_of(a.seq_q);
  fused_forward_kernel<kBf16, D>
      <<<static_cast<unsigned>(blocks), mma::kBlockThreads, 0, s>>>(a, out, lse);
}

}  // namespace

namespace {

// Whether the code the driver picked for this GPU was built for sm_80 or
// later (its PTX version: sm_90 code on an H100/H200, the compute_80 PTX
// compiled for other GPUs since Ampere); the sm_75 build only traps. Asked
// once a process (the backward's kernels come from the same builds).
bool tensor_core_code_loaded() {
  static const bool loaded = [] {
    cudaFuncAttributes attributes;
    if (cudaFuncGetAttributes(&attributes, fused_forward_kernel<true, 64>) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return attributes.ptxVersion >= 80;
  }();
  return loaded;
}

}  // namespace

bool fused_attention_supported(const FusedAttention& a, const void* const* tensors, int count) {
  if (a.head_dim != 32 && a.head_dim != 64) return false;
  if (!tensor_core_code_loaded()) return false;
  for (int i = 0; i < count; ++i)
    if (reinterpret_cast<uintptr_t>(tensors[i]) % 16 != 0) return false;
  const int64_t longest = a.seq_q > a.seq_k ? a.seq_q : a.seq_k;
  return a.batch > 0 && a.heads > 0 && a.seq_q > 0 && a.seq_k > 0 &&
         a.batch * a.heads * fused::tiles_of(longest) < (int64_t{1} << 31);
}

void fused_attention_forward(const FusedAttention& a, uint16_t* out, float* lse, Stream s) {
  if (a.bf16) {
    if (a.head_dim == 32) launch_forward<true, 32>(a, out, lse, s);
    else launch_forward<true, 64>(a, out, lse, s);
  } else {
    if (a.head_dim == 32) launch_forward<false, 32>(a, out, lse, s);
    else launch_forward<false, 64>(a, out, lse, s);
  }
}

}  // namespace ctp::cuda::launch
