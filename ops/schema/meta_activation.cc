#include "ops/schema/meta_activation.h"

#include <sstream>

#include "ops/schema/meta_math.h"
#include "ops/schema/shape_rules.h"

namespace ctp::meta {
namespace {

// An attribute's value as written: 0.5, 1e+07.
std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

bool is_floating(DataType d) {
  return d == DataType::FP32 || d == DataType::FP64 || d == DataType::FP16 || d == DataType::BF16;
}

void require_floating(const OpContext& ctx, std::string_view slot, TensorMeta t) {
  if (!is_floating(t.dtype))
    ctx.fail(ctx.describe_input(slot) + " has dtype " + std::string(to_string(t.dtype)) +
             "; the op takes FP32, FP64, FP16 or BF16");
}

// A bound or seed tensor: one element (known dims only).
void require_one_element(const OpContext& ctx, std::string_view slot, TensorMeta t) {
  const int64_t n = product(t.shape);
  if (n >= 0 && n != 1)
    ctx.fail(ctx.describe_input(slot) + " " + shape_to_string(t.shape) + " must hold one element");
}

void clip_inputs(const OpContext& ctx, TensorMeta x, const TensorMeta* min, const TensorMeta* max) {
  require_floating(ctx, "X", x);
  if (min) require_one_element(ctx, "Min", *min);
  if (max) require_one_element(ctx, "Max", *max);
  // The attributes are the bounds unless tensors replace them; check them here,
  // where they are known before the run.
  if (!min && !max) clip_bounds(ctx, ctx.float_attr("min"), ctx.float_attr("max"));
}

}  // namespace

Shape activation(const OpContext& ctx, TensorMeta x) {
  require_floating(ctx, "X", x);
  return x.shape;
}

Shape activation_grad(const OpContext& ctx, std::string_view in_slot, TensorMeta in,
                      TensorMeta dout) {
  require_floating(ctx, in_slot, in);
  require_same_dtype(ctx, in_slot, in, "Out@GRAD", dout);
  require_shape(ctx, "Out@GRAD", dout.shape, in.shape);
  return in.shape;
}

Shape clip(const OpContext& ctx, TensorMeta x, const TensorMeta* min, const TensorMeta* max) {
  clip_inputs(ctx, x, min, max);
  return x.shape;
}

Shape clip_grad(const OpContext& ctx, TensorMeta x, const TensorMeta* min, const TensorMeta* max,
                TensorMeta dout) {
  clip_inputs(ctx, x, min, max);
  require_same_dtype(ctx, "X", x, "Out@GRAD", dout);
  require_shape(ctx, "Out@GRAD", dout.shape, x.shape);
  return x.shape;
}

void clip_bounds(const OpContext& ctx, double min, double max) {
  // Written so that a NaN bound fails too.
  if (!(min <= max))
    ctx.fail("max " + number(max) + " is below min " + number(min) + " (clip needs min <= max)");
}

namespace {

DropoutMeta dropout_attrs(const OpContext& ctx) {
  DropoutMeta m;
  const double prob = ctx.float_attr("dropout_prob");
  if (!(prob >= 0.0 && prob <= 1.0))
    ctx.fail("dropout_prob " + number(prob) + " is outside [0, 1]");
  m.prob = static_cast<float>(prob);
  const std::string mode = ctx.string_attr("dropout_implementation");
  if (mode != "downgrade_in_infer" && mode != "upscale_in_train")
    ctx.fail("dropout_implementation '" + mode +
             "' is neither 'downgrade_in_infer' nor 'upscale_in_train'");
  m.upscale_in_train = mode == "upscale_in_train";
  m.is_test = ctx.bool_attr("is_test");
  m.fix_seed = ctx.bool_attr("fix_seed");
  m.seed = ctx.int_attr("seed");
  return m;
}

}  // namespace

DropoutMeta dropout(const OpContext& ctx, TensorMeta x, const TensorMeta* seed) {
  DropoutMeta m = dropout_attrs(ctx);
  require_floating(ctx, "X", x);
  if (seed) {
    require_one_element(ctx, "Seed", *seed);
    if (seed->dtype != DataType::INT32 && seed->dtype != DataType::INT64)
      ctx.fail(ctx.describe_input("Seed") + " has dtype " + std::string(to_string(seed->dtype)) +
               "; a seed is INT32 or INT64");
  }
  m.shape = x.shape;
  return m;
}

DropoutMeta dropout_grad(const OpContext& ctx, TensorMeta mask, TensorMeta dout) {
  DropoutMeta m = dropout_attrs(ctx);
  require_floating(ctx, "Out@GRAD", dout);
  if (mask.dtype != DataType::UINT8)
    ctx.fail(ctx.describe_input("Mask") + " has dtype " + std::string(to_string(mask.dtype)) +
             "; dropout's mask is UINT8");
  require_shape(ctx, "Mask", mask.shape, dout.shape);
  m.shape = dout.shape;
  return m;
}

}  // namespace ctp::meta
