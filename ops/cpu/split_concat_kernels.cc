// split and concat along an axis, for tensors of any dtype (they move bytes).
#include <cstring>

#include "ops/cpu/cpu_kernel_util.h"

namespace ctp::cpu {
namespace {

int64_t axis_of(KernelContext& ctx, std::size_t rank) {
  const int64_t axis = ctx.has_input("AxisTensor")
                           ? static_cast<int64_t>(scalar_value(ctx.input("AxisTensor")))
                           : ctx.attr_int("axis", 0);
  return normalize_axis(ctx, axis, rank, "axis");
}

// The sizes of the pieces along the axis: `sections` (one -1 takes the
// rest) or `num` equal pieces.
std::vector<int64_t> split_sizes(KernelContext& ctx, int64_t extent, std::size_t outputs) {
  std::vector<int64_t> sizes = ctx.attr_ints("sections", {});
  const int64_t num = ctx.attr_int("num", 0);
  if (sizes.empty()) {
    if (num <= 0 || extent % num != 0)
      throw Error(ctx.where() + "num " + std::to_string(num) + " does not divide the axis of size " +
                  std::to_string(extent) + " (and no sections were given)");
    sizes.assign(static_cast<std::size_t>(num), extent / num);
  } else {
    int64_t known = 0, unknown = -1;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == -1) {
        if (unknown >= 0) throw Error(ctx.where() + "sections has more than one -1");
        unknown = static_cast<int64_t>(i);
      } else {
        known += sizes[i];
      }
    }
    if (unknown >= 0) sizes[static_cast<std::size_t>(unknown)] = extent - known;
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) throw Error(ctx.where() + "sections " + shape_string(sizes) + " are invalid");
      total += s;
    }
    if (total != extent)
      throw Error(ctx.where() + "sections " + shape_string(sizes) + " do not add up to the axis size " +
                  std::to_string(extent));
  }
  if (sizes.size() != outputs)
    throw Error(ctx.where() + std::to_string(sizes.size()) + " pieces but " +
                std::to_string(outputs) + " outputs in Out");
  return sizes;
}

void split(KernelContext& ctx) {
  const Tensor x = ctx.input("X");
  const auto& shape = x.shape();
  const auto axis = static_cast<std::size_t>(axis_of(ctx, shape.size()));
  const std::size_t outputs = ctx.output_names("Out").size();
  const std::vector<int64_t> sizes = split_sizes(ctx, shape[axis], outputs);
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
  const std::size_t n = ctx.input_names("X").size();
  if (n == 0) throw Error(ctx.where() + "X has no inputs");
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < n; ++i) inputs.push_back(ctx.input("X", i));
  const auto& first = inputs[0].shape();
  const auto axis = static_cast<std::size_t>(axis_of(ctx, first.size()));
  std::vector<int64_t> out_shape = first;
  out_shape[axis] = 0;
  for (const Tensor& t : inputs) {
    bool compatible = t.dtype() == inputs[0].dtype() && t.shape().size() == first.size();
    for (std::size_t d = 0; compatible && d < first.size(); ++d)
      compatible = d == axis || t.shape()[d] == first[d];
    if (!compatible)
      throw Error(ctx.where() + "input " + shape_string(t.shape()) + " " +
                  std::string(to_string(t.dtype())) + " cannot be joined to " +
                  shape_string(first) + " " + std::string(to_string(inputs[0].dtype())) +
                  " along axis " + std::to_string(axis));
    out_shape[axis] += t.shape()[axis];
  }
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
