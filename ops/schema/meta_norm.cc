#include "ops/schema/meta_norm.h"

#include "ops/schema/shape_rules.h"

namespace ctp::meta {
namespace {

std::string described(const OpContext& ctx, std::string_view slot, const Shape& shape) {
  return ctx.describe_input(slot) + " " + shape_to_string(shape);
}

// Fails unless input `slot` is [length] of the statistics' dtype of `m`
// (for an X of x_dtype).
void require_vector(const OpContext& ctx, std::string_view slot, TensorMeta t, int64_t length,
                    DataType dtype, DataType x_dtype, const std::string& why) {
  if (t.shape.size() != 1 || (length >= 0 && t.shape[0] >= 0 && t.shape[0] != length))
    ctx.fail(described(ctx, slot, t.shape) + " must be [" + std::to_string(length) + "] (" +
             why + ")");
  if (t.dtype != dtype)
    ctx.fail(ctx.describe_input(slot) + " has dtype " + std::string(to_string(t.dtype)) +
             ", expected " + std::string(to_string(dtype)) + " (for X of dtype " +
             std::string(to_string(x_dtype)) + ")");
}

}  // namespace

LayerNormMeta layer_norm(const OpContext& ctx, TensorMeta x, std::optional<TensorMeta> scale,
                         std::optional<TensorMeta> bias) {
  const std::size_t rank = x.shape.size();
  const int64_t axis = ctx.int_attr("begin_norm_axis");
  if (axis < 1 || axis >= static_cast<int64_t>(rank))
    ctx.fail("begin_norm_axis " + std::to_string(axis) + " must be in [1, " +
             std::to_string(rank) + ") for " + described(ctx, "X", x.shape));
  LayerNormMeta m;
  m.epsilon = ctx.float_attr("epsilon");
  if (!(m.epsilon >= 0.0 && m.epsilon <= 0.001))
    ctx.fail("epsilon " + std::to_string(m.epsilon) + " must be in [0, 0.001]");
  m.begin_norm_axis = static_cast<std::size_t>(axis);
  m.rows = product(x.shape, 0, m.begin_norm_axis);
  m.cols = product(x.shape, m.begin_norm_axis, rank);
  if (x.dtype == DataType::FP64) m.stat_dtype = DataType::FP64;
  else if (x.dtype == DataType::FP32 || x.dtype == DataType::FP16 || x.dtype == DataType::BF16)
    m.stat_dtype = DataType::FP32;
  else
    ctx.fail(ctx.describe_input("X") + " has dtype " + std::string(to_string(x.dtype)) +
             "; layer_norm takes FP32, FP64, FP16 and BF16");
  m.stat_shape = {m.rows};
  const std::string why = "the normalised dims of " + described(ctx, "X", x.shape) +
                          " at begin_norm_axis " + std::to_string(axis) + " hold " +
                          std::to_string(m.cols) + " elements";
  if (scale) require_vector(ctx, "Scale", *scale, m.cols, m.stat_dtype, x.dtype, why);
  if (bias) require_vector(ctx, "Bias", *bias, m.cols, m.stat_dtype, x.dtype, why);
  return m;
}

LayerNormMeta layer_norm_grad(const OpContext& ctx, TensorMeta x, std::optional<TensorMeta> scale,
                              std::optional<TensorMeta> bias, TensorMeta mean,
                              TensorMeta variance, TensorMeta dy) {
  LayerNormMeta m = layer_norm(ctx, x, scale, bias);
  const std::string why = "one statistic per row of " + described(ctx, "X", x.shape);
  require_vector(ctx, "Mean", mean, m.rows, m.stat_dtype, x.dtype, why);
  require_vector(ctx, "Variance", variance, m.rows, m.stat_dtype, x.dtype, why);
  if (!compatible(dy.shape, x.shape) || dy.dtype != x.dtype)
    ctx.fail(described(ctx, "Y@GRAD", dy.shape) + " " + std::string(to_string(dy.dtype)) +
             " does not match " + described(ctx, "X", x.shape) + " " +
             std::string(to_string(x.dtype)));
  return m;
}

}  // namespace ctp::meta
