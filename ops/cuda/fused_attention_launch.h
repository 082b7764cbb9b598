// Launchers of the fused attention kernels (fused_attention_forward.cu,
// fused_attention_backward.cu): flash_attn and flash_attn_grad with 16-bit
// q, k, v in one kernel each (the backward in three: a row pass, dK and dV,
// dQ), on the tensor cores, the scores and their gradients never leaving
// the chip. They replace the cuBLAS GEMMs and row kernels of
// attention_launch.h, which moved BERT-large's FP32 scores and dP through
// memory (11.6 ms of a 49 ms step on an H200, bench/RESULTS.md session 15),
// where fused_attention_supported says yes. Same rules (meta_attention.h):
// P is rounded to 16 bits before P V and dV = P^T dO, dS before dQ and dK, as
// FlashAttention does; all sums are FP32.
#pragma once
#include <cstdint>

#include "ops/cuda/device_kernels.h"

namespace ctp::cuda::launch {

// One flash_attn op: q [batch, seq_q, heads, head_dim], k and v [batch,
// seq_k, heads, head_dim], 16-bit elements as stored (bf16: BF16, else
// FP16); lse is FP32 [batch, heads, seq_q].
struct FusedAttention {
  const uint16_t *q = nullptr, *k = nullptr, *v = nullptr;
  int64_t batch = 0, seq_q = 0, seq_k = 0, heads = 0, head_dim = 0;
  float scale = 1;
  bool causal = false;
  bool bf16 = true;
};

// Whether the fused kernels take this op: head_dim 32 or 64 (the tile
// widths instantiated), every tensor 16-byte aligned (they load 16-byte
// packs), and a grid that fits.
bool fused_attention_supported(const FusedAttention& a, const void* const* tensors, int count);

// out (q's layout) and lse.
void fused_attention_forward(const FusedAttention& a, uint16_t* out, float* lse, Stream s);

// The input gradients from out, dout (= out@GRAD) and the forward's lse;
// `rows` is scratch of batch x heads x seq_q floats (rowsum(dout * out)).
// A null gradient is not written (dk and dv are made together: with one of
// them null the other is still computed).
struct FusedAttentionGrads {
  const uint16_t* out = nullptr;
  const uint16_t* dout = nullptr;
  const float* lse = nullptr;
  float* rows = nullptr;
  uint16_t *dq = nullptr, *dk = nullptr, *dv = nullptr;
};
void fused_attention_backward(const FusedAttention& a, const FusedAttentionGrads& g, Stream s);

}  // namespace ctp::cuda::launch
