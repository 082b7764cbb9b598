// The attributes of relu6, hard_sigmoid, hard_swish and swish as their CPU
// and CUDA kernels (and grads) read them, in one place.
#pragma once
#include "ops/common/attr_activation_math.h"
#include "ops/schema/op_context.h"

namespace ctp {

// The op's attributes of `kind`, with the schema's defaults.
attr_activation::Coefficients coefficients_of(const OpContext& ctx, attr_activation::Kind kind);

}  // namespace ctp
