// The row kernels of flash_attn and flash_attn_grad (attention_launch.h): a
// warp per row of scores, 32 adjacent keys per step. The forward reads a
// row of up to 512 scores once into registers (max, sum of exponentials,
// probabilities); a longer row is read twice: once for its max and sum in
// one pass (each lane keeps a running max and a sum rescaled when the max
// grows, as FlashAttention's online softmax does; the lanes' pairs are then
// merged), once to write the probabilities. Everything is computed in float;
// 16-bit outputs are rounded once.
#include <cmath>

#include "ops/cuda/attention_launch.h"
#include "ops/cuda/device_math.cuh"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh

constexpr unsigned kRowsPerBlock = kThreads / 32;

// A warp per row, the grid striding over the rows.
__device__ inline int64_t first_warp_row() {
  return static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
}
__device__ inline int64_t warp_row_stride() {
  return static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
}

// Keys of query i that a causal mask leaves visible: j < visible.
__device__ inline int64_t visible_keys(const AttentionRows& r, int64_t row) {
  if (!r.causal) return r.seq_k;
  const int64_t i = row % r.seq_q;
  const int64_t visible = i + 1 + r.seq_k - r.seq_q;
  return visible < 0 ? 0 : (visible > r.seq_k ? r.seq_k : visible);
}

// (max, sum of exp(x - max)) of two sets of scores, as one.
__device__ inline void merge(float& max_value, float& sum, float other_max, float other_sum) {
  const float m = fmaxf(max_value, other_max);
  if (m == -INFINITY) return;  // both empty
  sum = sum * expf(max_value - m) + other_sum * expf(other_max - m);
  max_value = m;
}

// log sum_j<visible exp(row[j]) over a warp, +inf for no visible key (so
// that exp(x - lse) is 0, as FlashAttention stores fully masked rows).
__device__ float row_lse(const float* row, int64_t visible, unsigned lane) {
  float max_value = -INFINITY, sum = 0;
  for (int64_t j = lane; j < visible; j += 32) {
    const float x = row[j];
    if (x > max_value) {
      sum = sum * expf(max_value - x) + 1.0f;
      max_value = x;
    } else {
      sum += expf(x - max_value);
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float other_max = __shfl_xor_sync(0xffffffffu, max_value, o);
    const float other_sum = __shfl_xor_sync(0xffffffffu, sum, o);
    merge(max_value, sum, other_max, other_sum);
  }
  return visible > 0 ? max_value + logf(sum) : INFINITY;
}

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <typename T>
__global__ void attention_probs_kernel(const float* scores, T* probs, float* lse,
                                       AttentionRows r) {
  const unsigned lane = threadIdx.x & 31u;
  for (int64_t row = first_warp_row(); row < r.rows; row += warp_row_stride()) {
    const float* s = scores + row * r.seq_k;
    const int64_t visible = visible_keys(r, row);
    const float row_log_sum = row_lse(s, visible, lane);
    T* p = probs + row * r.seq_k;
    for (int64_t j = lane; j < r.seq_k; j += 32)
      p[j] = narrow<T>(j < visible ? expf(s[j] - row_log_sum) : 0.0f);
    if (lane == 0) lse[row] = row_log_sum;
  }
}

// The same for rows of at most 32 x kPerLane scores, which the warp holds in
// registers: the scores are read once (BERT's 512 keys: 16 a lane).
constexpr int kPerLane = 16;

template <typename T>
__global__ void attention_probs_in_registers_kernel(const float* scores, T* probs, float* lse,
                                                    AttentionRows r) {
  const unsigned lane = threadIdx.x & 31u;
  for (int64_t row = first_warp_row(); row < r.rows; row += warp_row_stride()) {
    const float* s = scores + row * r.seq_k;
    const int64_t visible = visible_keys(r, row);
    float x[kPerLane];
    float max_value = -INFINITY;
#pragma unroll
    for (int t = 0; t < kPerLane; ++t) {
      const int64_t j = lane + 32 * t;
      x[t] = j < visible ? s[j] : -INFINITY;
      max_value = fmaxf(max_value, x[t]);
    }
    max_value = warp_max(max_value);
    float sum = 0;
#pragma unroll
    for (int t = 0; t < kPerLane; ++t)
      if (lane + 32 * t < visible) sum += expf(x[t] - max_value);
    sum = warp_sum(sum);
    const float row_log_sum = visible > 0 ? max_value + logf(sum) : INFINITY;
    T* p = probs + row * r.seq_k;
#pragma unroll
    for (int t = 0; t < kPerLane; ++t) {
      const int64_t j = lane + 32 * t;
      if (j < r.seq_k) p[j] = narrow<T>(j < visible ? expf(x[t] - row_log_sum) : 0.0f);
    }
    if (lane == 0) lse[row] = row_log_sum;
  }
}

template <typename T>
__global__ void attention_grad_scores_kernel(const float* scores, const float* dprobs,
                                             const float* lse, const T* out, const T* dout,
                                             T* probs, T* dscores, AttentionGradRows g) {
  const AttentionRows& r = g.rows;
  const unsigned lane = threadIdx.x & 31u;
  for (int64_t row = first_warp_row(); row < r.rows; row += warp_row_stride()) {
    // out and dout of (batch index, head) = bh and query row % seq_q, in
    // [batch, seq_q, heads, head_dim].
    const int64_t bh = row / r.seq_q;
    const int64_t at = ((bh / g.heads * r.seq_q + row % r.seq_q) * g.heads + bh % g.heads) *
                       g.head_dim;
    float d = 0;
    for (int64_t c = lane; c < g.head_dim; c += 32)
      d += widen(out[at + c]) * widen(dout[at + c]);
    d = warp_sum(d);
    const int64_t visible = visible_keys(r, row);
    const float row_log_sum = lse[row];
    const int64_t base = row * r.seq_k;
    for (int64_t j = lane; j < r.seq_k; j += 32) {
      const float p = j < visible ? expf(scores[base + j] - row_log_sum) : 0.0f;
      const float ds = j < visible ? p * (dprobs[base + j] - d) * g.scale : 0.0f;
      probs[base + j] = narrow<T>(p);
      dscores[base + j] = narrow<T>(ds);
    }
  }
}

unsigned row_blocks(int64_t rows) {
  const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  return static_cast<unsigned>(blocks < 65535 * 32 ? blocks : 65535 * 32);
}

}  // namespace

template <typename T>
void attention_probs(const float* scores, T* probs, float* lse, const AttentionRows& rows,
                     Stream s) {
  if (rows.rows <= 0) return;
  if (rows.seq_k <= 32 * kPerLane)
    attention_probs_in_registers_kernel<T>
        <<<row_blocks(rows.rows), kThreads, 0, s>>>(scores, probs, lse, rows);
  else
    attention_probs_kernel<T><<<row_blocks(rows.rows), kThreads, 0, s>>>(scores, probs, lse, rows);
}

template <typename T>
void attention_grad_scores(const float* scores, const float* dprobs, const float* lse,
                           const T* out, const T* dout, T* probs, T* dscores,
                           const AttentionGradRows& g, Stream s) {
  if (g.rows.rows <= 0) return;
  attention_grad_scores_kernel<T><<<row_blocks(g.rows.rows), kThreads, 0, s>>>(
      scores, dprobs, lse, out, dout, probs, dscores, g);
}

#define CTP_INSTANTIATE_ATTENTION(T)                                                       \
  template void attention_probs<T>(const float*, T*, float*, const AttentionRows&, Stream); \
  template void attention_grad_scores<T>(const float*, const float*, const float*, const T*, \
                                         const T*, T*, T*, const AttentionGradRows&, Stream);

CTP_INSTANTIATE_ATTENTION(float)
CTP_INSTANTIATE_ATTENTION(Half)
CTP_INSTANTIATE_ATTENTION(BFloat16)

}  // namespace ctp::cuda::launch
