#include "ops/common/attr_activation_inputs.h"

namespace ctp {

attr_activation::Coefficients coefficients_of(const OpContext& ctx, attr_activation::Kind kind) {
  using attr_activation::Kind;
  switch (kind) {
    case Kind::Relu6: return {ctx.float_attr("threshold"), 0, 0};
    case Kind::HardSigmoid: return {ctx.float_attr("slope"), ctx.float_attr("offset"), 0};
    case Kind::HardSwish:
      return {ctx.float_attr("threshold"), ctx.float_attr("scale"), ctx.float_attr("offset")};
    case Kind::Swish: return {ctx.float_attr("beta"), 0, 0};
  }
  return {};
}

}  // namespace ctp
