#include "ops/common/shape_inputs.h"

namespace ctp {
namespace {

int64_t element(const KernelContext& ctx, const Tensor& t, int64_t i, std::string_view slot) {
  switch (t.dtype()) {
    case DataType::INT32: return t.data<int32_t>()[i];
    case DataType::INT64: return t.data<int64_t>()[i];
    default:
      ctx.fail(ctx.describe_input(slot) + " has dtype " + std::string(to_string(t.dtype())) +
               "; a shape is INT32 or INT64");
  }
}

}  // namespace

std::optional<std::vector<int64_t>> runtime_shape(const KernelContext& ctx, const HostInput& host) {
  std::vector<int64_t> shape;
  if (ctx.has_input("ShapeTensor")) {
    for (std::size_t i = 0; i < ctx.input_count("ShapeTensor"); ++i) {
      const Tensor t = host("ShapeTensor", i);
      if (t.numel() != 1)
        ctx.fail(ctx.describe_input("ShapeTensor", i) + " holds " + std::to_string(t.numel()) +
                 " elements; each ShapeTensor gives one dim");
      shape.push_back(element(ctx, t, 0, "ShapeTensor"));
    }
    return shape;
  }
  if (!ctx.has_input("Shape")) return std::nullopt;
  const Tensor t = host("Shape", 0);
  for (int64_t i = 0; i < t.numel(); ++i) shape.push_back(element(ctx, t, i, "Shape"));
  return shape;
}

Tensor dims_tensor(const Shape& dims) {
  Tensor t(DataType::INT32, {static_cast<int64_t>(dims.size())});
  for (std::size_t i = 0; i < dims.size(); ++i) t.data<int32_t>()[i] = static_cast<int32_t>(dims[i]);
  return t;
}

}  // namespace ctp
