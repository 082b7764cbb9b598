// split and concat along an axis, for tensors of any dtype (they move bytes).
#include <cstring>

#include "ops/cpu/cpu_kernel_util.h"
#include "ops/schema/meta_tensor.h"

namespace ctp::cpu {
namespace {

// The axis: AxisTensor's value when the op has one, else the attribute.
int64_t axis_value(KernelContext& ctx) {
  return ctx.has_input("AxisTensor") ? static_cast<int64_t>(scalar_value(ctx.input("AxisTensor")))
                                     : ctx.int_attr("axis");
}

void split(KernelContext& ctx) {
  const Tensor x = ctx.input("X");
  const auto& shape = x.shape();
  const meta::SplitMeta m = meta::split(ctx, meta_of(x), axis_value(ctx));
  const std::size_t axis = m.axis, outputs = m.sizes.size();
  const std::vector<int64_t>& sizes = m.sizes;
  const int64_t outer = product(shape, 0, axis);
  const std::size_t row_bytes = static_cast<std::size_t>(product(shape, axis + 1, shape.size())) *
                                element_size(x.dtype());
  const std::size_t x_stride = row_bytes * static_cast<std::size_t>(shape[axis]);
  const char* src = static_cast<const char*>(x.raw_data());
  std::size_t start = 0;  // bytes into each outer slice of X
  for (std::size_t k = 0; k < outputs; ++k) {
    std::vector<int64_t> piece_shape = shape;
    piece_shape[axis] = sizes[k];
    Tensor& out = ctx.output("Out", k);
    out.resize(x.dtype(), piece_shape);
    const std::size_t piece = row_bytes * static_cast<std::size_t>(sizes[k]);
    char* dst = piece ? static_cast<char*>(out.raw_data()) : nullptr;
    for (int64_t o = 0; o < outer && piece; ++o)
      std::memcpy(dst + o * piece, src + o * x_stride + start, piece);
    start += piece;
  }
}

void concat(KernelContext& ctx) {
  std::vector<Tensor> inputs;
  std::vector<TensorMeta> metas;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) inputs.push_back(ctx.input("X", i));
  for (const Tensor& t : inputs) metas.push_back(meta_of(t));
  const meta::ConcatMeta m = meta::concat(ctx, metas, axis_value(ctx));
  const std::size_t axis = m.axis;
  const std::vector<int64_t>& out_shape = m.out_shape;
  const std::vector<int64_t>& first = inputs[0].shape();
  Tensor& out = ctx.output("Out");
  out.resize(inputs[0].dtype(), out_shape);
  const int64_t outer = product(first, 0, axis);
  const std::size_t row_bytes = static_cast<std::size_t>(product(first, axis + 1, first.size())) *
                                element_size(inputs[0].dtype());
  const std::size_t out_stride = row_bytes * static_cast<std::size_t>(out_shape[axis]);
  char* dst = out.bytes() ? static_cast<char*>(out.raw_data()) : nullptr;
  std::size_t start = 0;
  for (const Tensor& t : inputs) {
    const std::size_t piece = row_bytes * static_cast<std::size_t>(t.shape()[axis]);
    const char* src = piece ? static_cast<const char*>(t.raw_data()) : nullptr;
    for (int64_t o = 0; o < outer && piece; ++o)
      std::memcpy(dst + o * out_stride + start, src + o * piece, piece);
    start += piece;
  }
}

}  // namespace

CTP_REGISTER_KERNEL(split, CPU, split);
CTP_REGISTER_KERNEL(concat, CPU, concat);

}  // namespace ctp::cpu
