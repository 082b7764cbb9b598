#include "ops/schema/meta_attention.h"

#include <cmath>
#include <sstream>
#include <string_view>

#include "ops/schema/shape_rules.h"

namespace ctp::meta {
namespace {

bool is_floating(DataType d) {
  return d == DataType::FP32 || d == DataType::FP64 || d == DataType::FP16 || d == DataType::BF16;
}

void require_rank4(const OpContext& ctx, std::string_view slot, TensorMeta t) {
  if (t.shape.size() != 4)
    ctx.fail(ctx.describe_input(slot) + " has shape " + shape_to_string(t.shape) +
             "; flash_attn takes rank 4 [batch, seq, heads, head_dim]");
}

// An input that must have q's dtype.
void require_dtype_of_q(const OpContext& ctx, std::string_view slot, TensorMeta t, DataType q) {
  if (t.dtype != q)
    ctx.fail(ctx.describe_input(slot) + " has dtype " + std::string(to_string(t.dtype)) +
             " but " + ctx.describe_input("q") + " has " + std::string(to_string(q)) +
             "; q, k and v take one dtype");
}

// The dropout attribute: in [0, 1), and refused above 0 when it would draw
// a mask (`drawn`: training), which no kernel implements.
void check_dropout(const OpContext& ctx, bool drawn) {
  const double p = ctx.float_attr("dropout");
  std::ostringstream value;
  value << p;
  if (!(p >= 0.0 && p < 1.0)) ctx.fail("dropout " + value.str() + " is outside [0, 1)");
  if (p > 0.0 && drawn)
    ctx.fail("dropout " + value.str() +
             " is not implemented (flash_attn computes without dropout: set dropout 0, or "
             "apply dropout outside the op)");
}

void refuse_mask(const OpContext& ctx, const TensorMeta* attn_mask) {
  if (attn_mask)
    ctx.fail(ctx.describe_input("attn_mask") +
             " is given; flash_attn with an attention mask is not implemented (use causal, or "
             "the unfused ops)");
}

// The shape rules shared by the forward and the gradient.
FlashAttnMeta attention_dims(const OpContext& ctx, TensorMeta q, TensorMeta k, TensorMeta v) {
  require_rank4(ctx, "q", q);
  require_rank4(ctx, "k", k);
  require_rank4(ctx, "v", v);
  if (!is_floating(q.dtype))
    ctx.fail(ctx.describe_input("q") + " has dtype " + std::string(to_string(q.dtype)) +
             "; flash_attn takes FP32, FP64, FP16 or BF16");
  require_dtype_of_q(ctx, "k", k, q.dtype);
  require_dtype_of_q(ctx, "v", v, q.dtype);
  const std::string qs = ctx.describe_input("q") + " " + shape_to_string(q.shape);
  const std::string ks = ctx.describe_input("k") + " " + shape_to_string(k.shape);
  const std::string vs = ctx.describe_input("v") + " " + shape_to_string(v.shape);
  FlashAttnMeta m;
  m.batch = merge_dim(ctx, merge_dim(ctx, q.shape[0], k.shape[0], "the batch of " + qs + " and " + ks),
                      v.shape[0], "the batch of " + qs + " and " + vs);
  m.seq_q = q.shape[1];
  m.seq_k = merge_dim(ctx, k.shape[1], v.shape[1], "the sequence of " + ks + " and " + vs);
  m.heads = merge_dim(ctx, merge_dim(ctx, q.shape[2], k.shape[2], "the heads of " + qs + " and " + ks),
                      v.shape[2], "the heads of " + qs + " and " + vs);
  m.head_dim =
      merge_dim(ctx, merge_dim(ctx, q.shape[3], k.shape[3], "the head_dim of " + qs + " and " + ks),
                v.shape[3], "the head_dim of " + qs + " and " + vs);
  m.scale = m.head_dim > 0 ? 1.0f / std::sqrt(static_cast<float>(m.head_dim)) : 0.0f;
  m.causal = ctx.bool_attr("causal");
  m.return_softmax = ctx.bool_attr("return_softmax");
  m.out_shape = q.shape;
  m.softmax_shape = m.return_softmax ? Shape{m.batch, m.heads, m.seq_q, m.seq_k} : Shape{0};
  m.softmax_lse_shape = {m.batch, m.heads, m.seq_q};
  m.seed_offset_shape = {2};
  return m;
}

// A tensor that must have `expected` shape and `dtype`.
void require_meta(const OpContext& ctx, std::string_view slot, TensorMeta t, const Shape& expected,
                  DataType dtype) {
  if (!compatible(t.shape, expected))
    ctx.fail(ctx.describe_input(slot) + " has shape " + shape_to_string(t.shape) +
             ", expected " + shape_to_string(expected));
  if (t.dtype != dtype)
    ctx.fail(ctx.describe_input(slot) + " has dtype " + std::string(to_string(t.dtype)) +
             ", expected " + std::string(to_string(dtype)));
}

}  // namespace

FlashAttnMeta flash_attn(const OpContext& ctx, TensorMeta q, TensorMeta k, TensorMeta v,
                         const TensorMeta* fixed_seed_offset, const TensorMeta* attn_mask) {
  FlashAttnMeta m = attention_dims(ctx, q, k, v);
  check_dropout(ctx, !ctx.bool_attr("is_test"));
  refuse_mask(ctx, attn_mask);
  if (fixed_seed_offset)
    require_meta(ctx, "fixed_seed_offset", *fixed_seed_offset, m.seed_offset_shape,
                 DataType::INT64);
  return m;
}

FlashAttnMeta flash_attn_grad(const OpContext& ctx, TensorMeta q, TensorMeta k, TensorMeta v,
                              TensorMeta out, TensorMeta softmax_lse,
                              const TensorMeta* attn_mask, TensorMeta dout) {
  FlashAttnMeta m = attention_dims(ctx, q, k, v);
  check_dropout(ctx, true);
  refuse_mask(ctx, attn_mask);
  require_meta(ctx, "out", out, m.out_shape, q.dtype);
  require_meta(ctx, "out@GRAD", dout, m.out_shape, q.dtype);
  require_meta(ctx, "softmax_lse", softmax_lse, m.softmax_lse_shape, DataType::FP32);
  return m;
}

}  // namespace ctp::meta
