#include "ops/schema/meta_batch_norm.h"

#include <string>

#include "ops/schema/shape_rules.h"

namespace ctp::meta {
namespace {

bool is_16_bit(DataType t) { return t == DataType::FP16 || t == DataType::BF16; }

BatchNormMeta view_of_x(const OpContext& ctx, TensorMeta x) {
  const Shape& s = x.shape;
  if (s.size() < 2 || s.size() > 5)
    ctx.fail(ctx.describe_input("X") + " has shape " + shape_to_string(s) +
             "; expected rank 2 to 5");
  const std::string layout = ctx.string_attr("data_layout");
  std::size_t axis = 1;
  if (layout == "NHWC") axis = s.size() - 1;
  else if (layout != "NCHW" && layout != "AnyLayout")
    ctx.fail("data_layout '" + layout + "' is not one of NCHW, NHWC");
  BatchNormMeta m;
  m.outer = product(s, 0, axis);
  m.channels = s[axis];
  m.inner = product(s, axis + 1, s.size());
  m.channel_shape = {m.channels};
  m.epsilon = ctx.float_attr("epsilon");
  m.momentum = ctx.float_attr("momentum");
  const bool test_mode = ctx.bool_attr("is_test") && !ctx.bool_attr("trainable_statistics");
  m.batch_stats = !test_mode && !ctx.bool_attr("use_global_stats");
  m.x_dtype = x.dtype;
  m.stats_dtype = is_16_bit(x.dtype) ? DataType::FP32 : x.dtype;
  return m;
}

// A per-channel input: [channels] of the statistics' dtype.
void require_channel_vector(const OpContext& ctx, std::string_view slot, TensorMeta t,
                            const BatchNormMeta& m) {
  if (!compatible(t.shape, m.channel_shape))
    ctx.fail(ctx.describe_input(slot) + " has shape " + shape_to_string(t.shape) + ", expected " +
             shape_to_string(m.channel_shape) + " (one value per channel of X)");
  if (t.dtype != m.stats_dtype)
    ctx.fail(ctx.describe_input(slot) + " is " + std::string(to_string(t.dtype)) + ", expected " +
             std::string(to_string(m.stats_dtype)) + " (the statistics' dtype for " +
             ctx.describe_input("X") + " " + std::string(to_string(m.x_dtype)) + ")");
}

}  // namespace

BatchNormMeta batch_norm(const OpContext& ctx, TensorMeta x, TensorMeta scale, TensorMeta bias,
                         TensorMeta mean, TensorMeta variance) {
  BatchNormMeta m = view_of_x(ctx, x);
  if (ctx.has_input("MomentumTensor"))
    ctx.fail("input MomentumTensor is not supported (use the momentum attribute)");
  require_channel_vector(ctx, "Scale", scale, m);
  require_channel_vector(ctx, "Bias", bias, m);
  require_channel_vector(ctx, "Mean", mean, m);
  require_channel_vector(ctx, "Variance", variance, m);
  return m;
}

BatchNormMeta batch_norm_grad(const OpContext& ctx, TensorMeta x, TensorMeta scale,
                              TensorMeta saved_mean, TensorMeta saved_variance, TensorMeta dy) {
  BatchNormMeta m = view_of_x(ctx, x);
  require_channel_vector(ctx, "Scale", scale, m);
  require_channel_vector(ctx, "SavedMean", saved_mean, m);
  require_channel_vector(ctx, "SavedVariance", saved_variance, m);
  // Without batch statistics the gradient reads the running ones.
  if (!m.batch_stats)
    for (const char* slot : {"Mean", "Variance"})
      if (!ctx.has_input(slot))
        ctx.fail(std::string("input ") + slot +
                 " is required when is_test or use_global_stats is set");
  if (!compatible(dy.shape, x.shape))
    ctx.fail(ctx.describe_input("Y@GRAD") + " has shape " + shape_to_string(dy.shape) +
             ", expected the shape of " + ctx.describe_input("X") + " " +
             shape_to_string(x.shape));
  return m;
}

}  // namespace ctp::meta
