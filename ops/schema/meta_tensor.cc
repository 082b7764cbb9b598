#include "ops/schema/meta_tensor.h"

#include <string>

#include "ops/schema/shape_rules.h"

namespace ctp::meta {
namespace {

// `sections` with its -1 resolved against the axis' dim (when known).
std::vector<int64_t> section_sizes(const OpContext& ctx, std::vector<int64_t> sections,
                                   int64_t dim, std::size_t axis) {
  if (sections.empty()) ctx.fail("needs num > 0 or a non-empty sections attribute");
  std::size_t unknown = sections.size();
  int64_t known_sum = 0;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (sections[i] == -1) {
      if (unknown != sections.size()) ctx.fail("sections has more than one -1");
      unknown = i;
    } else if (sections[i] < 0) {
      ctx.fail("sections " + shape_to_string(sections) + " has a negative entry");
    } else {
      known_sum += sections[i];
    }
  }
  if (dim < 0) return sections;
  if (unknown != sections.size()) {
    if (known_sum > dim)
      ctx.fail("sections " + shape_to_string(sections) + " exceed dim " + std::to_string(dim) +
               " of " + ctx.describe_input("X"));
    sections[unknown] = dim - known_sum;
  } else if (known_sum != dim) {
    ctx.fail("sections " + shape_to_string(sections) + " sum to " + std::to_string(known_sum) +
             ", but " + ctx.describe_input("X") + " has dim " + std::to_string(dim) +
             " on axis " + std::to_string(axis));
  }
  return sections;
}

}  // namespace

SplitMeta split(const OpContext& ctx, TensorMeta x, int64_t axis) {
  SplitMeta m;
  m.axis = normalize_axis(ctx, axis, x.shape.size(), "axis");
  const int64_t dim = x.shape[m.axis];
  const std::size_t outs = ctx.output_count("Out");
  const int64_t num = ctx.int_attr("num");
  if (num > 0) {
    if (static_cast<int64_t>(outs) != num)
      ctx.fail("num is " + std::to_string(num) + " but output Out has " + std::to_string(outs) +
               " vars");
    if (dim >= 0 && dim % num != 0)
      ctx.fail(ctx.describe_input("X") + " has dim " + std::to_string(dim) + " on axis " +
               std::to_string(m.axis) + ", not divisible by num " + std::to_string(num));
    m.sizes.assign(outs, dim < 0 ? -1 : dim / num);
    return m;
  }
  m.sizes = section_sizes(ctx, ctx.ints_attr("sections"), dim, m.axis);
  if (m.sizes.size() != outs)
    ctx.fail("sections has " + std::to_string(m.sizes.size()) + " entries but output Out has " +
             std::to_string(outs) + " vars");
  return m;
}

ConcatMeta concat(const OpContext& ctx, const std::vector<TensorMeta>& xs, int64_t axis) {
  if (xs.empty()) ctx.fail("input X is empty");
  ConcatMeta m;
  m.out_shape = xs[0].shape;
  m.axis = normalize_axis(ctx, axis, m.out_shape.size(), "axis");
  for (std::size_t i = 1; i < xs.size(); ++i) {
    const TensorMeta& x = xs[i];
    if (x.shape.size() != m.out_shape.size())
      ctx.fail(ctx.describe_input("X", i) + " has rank " + std::to_string(x.shape.size()) +
               ", but " + ctx.describe_input("X", 0) + " has rank " +
               std::to_string(m.out_shape.size()));
    if (x.dtype != xs[0].dtype)
      ctx.fail(ctx.describe_input("X", i) + " has dtype " + std::string(to_string(x.dtype)) +
               ", but " + ctx.describe_input("X", 0) + " has " +
               std::string(to_string(xs[0].dtype)));
    for (std::size_t d = 0; d < m.out_shape.size(); ++d) {
      int64_t& out = m.out_shape[d];
      if (d == m.axis)
        out = (out < 0 || x.shape[d] < 0) ? -1 : out + x.shape[d];
      else
        out = merge_dim(ctx, out, x.shape[d],
                        ctx.describe_input("X", i) + " disagrees on dim " + std::to_string(d));
    }
  }
  return m;
}

CastMeta cast(const OpContext& ctx, TensorMeta x) {
  const CastMeta m{ctx.dtype_attr("in_dtype", x.dtype), ctx.dtype_attr("out_dtype", x.dtype)};
  if (m.in != x.dtype)
    ctx.fail(ctx.describe_input("X") + " has dtype " + std::string(to_string(x.dtype)) +
             ", but in_dtype is " + std::string(to_string(m.in)));
  return m;
}

CoalesceMeta coalesce_tensor(const OpContext& ctx, const std::vector<TensorMeta>& inputs,
                             std::size_t default_alignment) {
  if (inputs.empty()) ctx.fail("input Input is empty");
  if (ctx.output_count("Output") != inputs.size())
    ctx.fail("output Output has " + std::to_string(ctx.output_count("Output")) +
             " vars but input Input has " + std::to_string(inputs.size()));
  CoalesceMeta m;
  m.dtype = ctx.dtype_attr("dtype", inputs[0].dtype);
  const std::size_t elem = element_size(m.dtype);
  if (elem == 0) ctx.fail("dtype " + std::string(to_string(m.dtype)) + " is no element type");
  const int64_t user_elem = ctx.int_attr("user_defined_size_of_dtype");
  if (user_elem > 0 && static_cast<std::size_t>(user_elem) != elem)
    ctx.fail("user_defined_size_of_dtype " + std::to_string(user_elem) + " differs from the " +
             std::to_string(elem) + "-byte dtype " + std::string(to_string(m.dtype)) +
             "; mixed-size fusion is not supported");
  const bool use_align = ctx.bool_attr("use_align");
  const int64_t align_attr = ctx.int_attr("align_size");
  const std::size_t alignment =
      align_attr > 0 ? static_cast<std::size_t>(align_attr) : default_alignment;
  if (use_align && alignment % elem != 0)
    ctx.fail("align_size " + std::to_string(alignment) +
             " is not a multiple of the element size " + std::to_string(elem));
  std::size_t total = 0;
  bool known = true;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype != m.dtype)
      ctx.fail(ctx.describe_input("Input", i) + " has dtype " +
               std::string(to_string(inputs[i].dtype)) + ", but dtype is " +
               std::string(to_string(m.dtype)));
    const int64_t numel = product(inputs[i].shape);
    if (numel == 0) ctx.fail(ctx.describe_input("Input", i) + " has no elements");
    m.offset_bytes.push_back(total);
    if (numel < 0) known = false;
    if (!known) continue;
    std::size_t bytes = static_cast<std::size_t>(numel) * elem;
    if (use_align) bytes = (bytes + alignment - 1) / alignment * alignment;
    total += bytes;
  }
  m.fused_numel = known ? static_cast<int64_t>(total / elem) : -1;
  return m;
}

}  // namespace ctp::meta
