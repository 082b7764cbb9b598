#include "ops/schema/meta_quant.h"

#include <sstream>
#include <string>

#include "ops/schema/meta_math.h"
#include "ops/schema/shape_rules.h"

namespace ctp::meta {
namespace {

// Paddle registers these kernels for float (and float16 on GPUs); ctp takes
// FP32 and FP64.
void require_fp32_or_fp64(const OpContext& ctx, std::string_view slot, TensorMeta t) {
  if (t.dtype != DataType::FP32 && t.dtype != DataType::FP64)
    ctx.fail(ctx.describe_input(slot) + " has dtype " + std::string(to_string(t.dtype)) +
             "; the op takes FP32 or FP64");
}

void require_one_scale(const OpContext& ctx, std::string_view slot, TensorMeta scale,
                       TensorMeta x) {
  require_same_dtype(ctx, "X", x, slot, scale);
  const int64_t n = product(scale.shape);
  if (n >= 0 && n != 1)
    ctx.fail(ctx.describe_input(slot) + " " + shape_to_string(scale.shape) +
             " must hold one element (one scale for the whole tensor)");
}

}  // namespace

FakeQuantMeta fake_quantize(const OpContext& ctx, TensorMeta x, TensorMeta in_scale) {
  require_fp32_or_fp64(ctx, "X", x);
  require_one_scale(ctx, "InScale", in_scale, x);
  if (!ctx.bool_attr("is_test"))
    ctx.fail(
        "attribute is_test is false: the training form (a moving average of the scale through "
        "InAccum/InState) is not supported; ctp runs the inference form (is_test true), which "
        "quantizes with InScale");
  const int64_t bits = ctx.int_attr("bit_length");
  if (bits < 1 || bits > 16)
    ctx.fail("attribute bit_length is " + std::to_string(bits) + "; it must be in [1, 16]");
  const int64_t round_type = ctx.int_attr("round_type");
  if (round_type != 0 && round_type != 1)
    ctx.fail("attribute round_type is " + std::to_string(round_type) +
             "; it must be 0 (half to even, Paddle's default) or 1 (half away from zero)");
  return {x.shape, (int64_t{1} << (bits - 1)) - 1, static_cast<int>(round_type)};
}

FakeDequantMeta fake_dequantize(const OpContext& ctx, TensorMeta x, TensorMeta scale) {
  require_fp32_or_fp64(ctx, "X", x);
  require_one_scale(ctx, "Scale", scale, x);
  const double max_range = ctx.float_attr("max_range");
  if (!(max_range > 0)) {
    std::ostringstream v;
    v << max_range;
    ctx.fail("attribute max_range is " + v.str() + "; it must be positive");
  }
  return {x.shape, max_range};
}

Shape straight_through_grad(const OpContext& ctx, TensorMeta dout) {
  require_fp32_or_fp64(ctx, "Out@GRAD", dout);
  return dout.shape;
}

}  // namespace ctp::meta
