// The rules of flash_attn and flash_attn_grad (Paddle's fused attention,
// paddle.nn.functional.flash_attention), written once for the schema's
// inference (ops/schema/defs_attention.cc) and the CPU and CUDA kernels; see
// meta_math.h.
//
// q, k, v are [batch, seq, heads, head_dim] (the layout a linear layer's
// output has after a reshape, so no transposes), one floating-point dtype.
// out = softmax(scale * q k^T) v per batch and head, scale = 1/sqrt(head_dim);
// causal masks key j > query i + (seq_k - seq_q) (bottom-right aligned, as
// FlashAttention 2.1+). softmax_lse is the natural log of each query row's
// sum over its unmasked keys of exp(scale * q_i . k_j), FP32; a row with no
// unmasked key (causal with seq_q > seq_k) has out 0 and lse +inf, so that
// the backward's exp(s - lse) is 0 there, as FlashAttention writes it.
#pragma once
#include <cstdint>

#include "ops/schema/op_context.h"

namespace ctp::meta {

struct FlashAttnMeta {
  int64_t batch, seq_q, seq_k, heads, head_dim;  // -1 where unknown
  float scale;                                   // 1/sqrt(head_dim); 0 while head_dim is unknown
  bool causal;
  bool return_softmax;
  Shape out_shape;          // q's
  Shape softmax_shape;      // [batch, heads, seq_q, seq_k] with return_softmax, else [0]
  Shape softmax_lse_shape;  // [batch, heads, seq_q]
  Shape seed_offset_shape;  // [2]
};

// flash_attn: the dims above; fixed_seed_offset (null when absent) is INT64
// [2]. Refused, naming the op: a present attn_mask (not implemented), and a
// dropout above 0 outside is_test (no kernel draws a dropout mask).
FlashAttnMeta flash_attn(const OpContext& ctx, TensorMeta q, TensorMeta k, TensorMeta v,
                         const TensorMeta* fixed_seed_offset, const TensorMeta* attn_mask);
// flash_attn_grad: flash_attn's rules on q, k, v; out and out@GRAD have q's
// shape and dtype, softmax_lse is FP32 [batch, heads, seq_q]; a dropout
// above 0 is refused whatever is_test says (a backward trains).
// q@GRAD, k@GRAD, v@GRAD have the shapes and dtypes of q, k, v.
FlashAttnMeta flash_attn_grad(const OpContext& ctx, TensorMeta q, TensorMeta k, TensorMeta v,
                              TensorMeta out, TensorMeta softmax_lse,
                              const TensorMeta* attn_mask, TensorMeta dout);

// Whether key j is masked out for query i under causal (bottom-right
// aligned); both kernels call it.
inline bool causal_masked(const FlashAttnMeta& m, int64_t i, int64_t j) {
  return m.causal && j > i + (m.seq_k - m.seq_q);
}

}  // namespace ctp::meta
