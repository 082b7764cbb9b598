#include "ops/common/initializer_shape.h"

#include "ops/common/kernel_util.h"
#include "ops/schema/shape_rules.h"

namespace ctp {

std::vector<int64_t> initializer_shape(KernelContext& ctx) {
  std::vector<int64_t> shape;
  if (ctx.has_input("ShapeTensor")) {
    const Tensor& t = ctx.input("ShapeTensor");
    for (int64_t i = 0; i < t.numel(); ++i)
      shape.push_back(t.dtype() == DataType::INT32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i]);
  } else if (ctx.has_input("ShapeTensorList")) {
    for (std::size_t i = 0; i < ctx.input_count("ShapeTensorList"); ++i)
      shape.push_back(static_cast<int64_t>(scalar_value(ctx.input("ShapeTensorList", i))));
  } else {
    shape = ctx.ints_attr("shape");
  }
  for (int64_t d : shape)
    if (d < 0)
      ctx.fail("shape " + shape_to_string(shape) +
               " has a negative dimension (set the batch size before running)");
  return shape;
}

}  // namespace ctp
