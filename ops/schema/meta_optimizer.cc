#include "ops/schema/meta_optimizer.h"

#include <string>

#include "ops/schema/shape_rules.h"

namespace ctp::meta {

void require_like_param(const OpContext& ctx, std::string_view slot, TensorMeta param,
                        TensorMeta other) {
  if (!compatible(param.shape, other.shape) || param.dtype != other.dtype)
    ctx.fail(ctx.describe_input(slot) + " " + shape_to_string(other.shape) + " " +
             std::string(to_string(other.dtype)) + " does not match " +
             ctx.describe_input("Param") + " " + shape_to_string(param.shape) + " " +
             std::string(to_string(param.dtype)));
}

void require_one_element(const OpContext& ctx, std::string_view slot, TensorMeta t) {
  const int64_t numel = product(t.shape);
  if (numel >= 0 && numel != 1)
    ctx.fail(ctx.describe_input(slot) + " must hold one element, has " + std::to_string(numel));
}

MomentumAttrs momentum_attrs(const OpContext& ctx) {
  const std::string regularization = ctx.string_attr("regularization_method");
  if (!regularization.empty() && regularization != "l2_decay")
    ctx.fail("regularization_method '" + regularization +
             "' is not supported (use '' or 'l2_decay')");
  return {ctx.float_attr("mu"), ctx.bool_attr("use_nesterov"),
          regularization.empty() ? 0.0 : ctx.float_attr("regularization_coeff"),
          ctx.float_attr("rescale_grad")};
}

}  // namespace ctp::meta
