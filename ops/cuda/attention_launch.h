// Launchers of the row kernels of flash_attn and flash_attn_grad
// (attention_kernels.cu). The products around them are cuBLAS GEMMs
// (flash_attn_kernels_cuda.cc); these kernels turn one batch index's scores
// into probabilities and score gradients, a warp per row. Plain types, as
// device_kernels.h; T (the probabilities' and gradients' type) is float,
// Half or BFloat16, computed in float.
#pragma once
#include <cstdint>

#include "ops/cuda/device_kernels.h"

namespace ctp::cuda::launch {

// Rows of some batch indices' attention: `rows` = batch indices x heads x
// seq_q rows of seq_k FP32 scores (row r is (batch index, head) r / seq_q,
// query i = r % seq_q), already scaled. With `causal`, key j of query i is visible while
// j <= i + seq_k - seq_q (bottom-right aligned, as FlashAttention 2.1+).
struct AttentionRows {
  int64_t rows = 0;
  int64_t seq_q = 0;
  int64_t seq_k = 0;
  bool causal = false;
};

// lse[r] = log sum over visible keys of exp(scores), +inf for a row with no
// visible key; probs = exp(scores - lse), 0 at masked keys. probs may be
// the scores themselves (T float).
template <typename T>
void attention_probs(const float* scores, T* probs, float* lse, const AttentionRows& rows,
                     Stream s);

// The backward's row step, from the recomputed scores, dP = dO V^T and the
// forward's lse: P = exp(scores - lse), D = rowsum(dO * O) over head_dim
// (out and dout in [batch, seq_q, heads, head_dim] layout, from the rows'
// first batch index), dS = P (dP - D)
// scale; P and dS 0 at masked keys. probs may be scores and dscores dprobs
// (T float).
struct AttentionGradRows {
  AttentionRows rows;
  int64_t heads = 0;
  int64_t head_dim = 0;
  float scale = 1;
};
template <typename T>
void attention_grad_scores(const float* scores, const float* dprobs, const float* lse,
                           const T* out, const T* dout, T* probs, T* dscores,
                           const AttentionGradRows& g, Stream s);

}  // namespace ctp::cuda::launch
