#include "ops/schema/meta_shape.h"

#include <algorithm>

#include "ops/schema/shape_rules.h"

namespace ctp::meta {
namespace {

std::string described(const OpContext& ctx, std::string_view slot, const Shape& shape) {
  return ctx.describe_input(slot) + " " + shape_to_string(shape);
}

// Fails when the op gives one of `slots`: inputs that carry attribute
// values known only at run time, which ctp does not read.
void refuse_runtime_inputs(const OpContext& ctx, std::initializer_list<const char*> slots,
                           const char* attribute) {
  for (const char* slot : slots)
    if (ctx.has_input(slot))
      ctx.fail(ctx.describe_input(slot) + " gives '" + attribute +
               "' at run time, which ctp does not support; set the '" + attribute +
               "' attribute");
}

// Fails unless `out`, where known, holds as many elements as X.
void require_same_count(const OpContext& ctx, const Shape& x, const Shape& out,
                        const std::string& what) {
  const int64_t xn = product(x), on = product(out);
  if (xn >= 0 && on >= 0 && xn != on)
    ctx.fail(what + " " + shape_to_string(out) + " holds " + std::to_string(on) +
             " elements, but " + described(ctx, "X", x) + " holds " + std::to_string(xn));
}

}  // namespace

Shape xshape_of(const Shape& x) {
  Shape s{0};
  s.insert(s.end(), x.begin(), x.end());
  return s;
}

Shape shape_from_xshape(const OpContext& ctx, std::string_view slot, TensorMeta xshape) {
  if (xshape.shape.empty() || xshape.shape[0] != 0)
    ctx.fail(described(ctx, slot, xshape.shape) +
             " must be [0] followed by the forward input's shape");
  return Shape(xshape.shape.begin() + 1, xshape.shape.end());
}

namespace {

// reshape2 to `shape` (a 0 copies X's dim, one -1 takes the rest), which
// `attr_text` names in errors.
ReinterpretMeta reshape2_rules(const OpContext& ctx, TensorMeta x,
                               const std::vector<int64_t>& shape, const std::string& attr_text) {
  Shape out(shape.size());
  std::ptrdiff_t inferred = -1;
  int64_t known = 1;  // product of the other dims; -1 once one is unknown
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = shape[i];
    if (d == -1) {
      if (inferred >= 0) ctx.fail(attr_text + " has more than one -1");
      inferred = static_cast<std::ptrdiff_t>(i);
      continue;
    }
    if (d < -1) ctx.fail(attr_text + " has the negative dim " + std::to_string(d));
    if (d == 0 && i >= x.shape.size())
      ctx.fail(attr_text + " copies dim " + std::to_string(i) + " (a 0) of " +
               described(ctx, "X", x.shape) + ", which has rank " +
               std::to_string(x.shape.size()));
    out[i] = d == 0 ? x.shape[i] : d;
    known = (known < 0 || out[i] < 0) ? -1 : known * out[i];
  }
  if (inferred >= 0) {
    const int64_t total = product(x.shape);
    if (total < 0 || known < 0) {
      out[inferred] = -1;
    } else if (known == 0 || total % known != 0) {
      ctx.fail(attr_text + " cannot hold the " + std::to_string(total) + " elements of " +
               described(ctx, "X", x.shape));
    } else {
      out[inferred] = total / known;
    }
  }
  require_same_count(ctx, x.shape, out, attr_text + " gives");
  return {out, xshape_of(x.shape)};
}

}  // namespace

ReinterpretMeta reshape2(const OpContext& ctx, TensorMeta x) {
  // Declared vars: a shape given at run time fixes only Out's rank.
  if (ctx.has_input("ShapeTensor"))
    return {Shape(ctx.input_count("ShapeTensor"), -1), xshape_of(x.shape)};
  if (ctx.has_input("Shape")) {
    const Var* shape = ctx.block().find_var(ctx.input_names("Shape")[0]);
    const int64_t rank = shape ? product(shape->shape) : -1;
    return {rank < 0 ? Shape{-1} : Shape(static_cast<std::size_t>(rank), -1),
            xshape_of(x.shape)};
  }
  const std::vector<int64_t> shape = ctx.ints_attr("shape");
  return reshape2_rules(ctx, x, shape, "attribute 'shape' " + shape_to_string(shape));
}

ReinterpretMeta reshape2_to(const OpContext& ctx, TensorMeta x,
                            const std::vector<int64_t>& runtime_shape) {
  const char* slot = ctx.has_input("ShapeTensor") ? "ShapeTensor" : "Shape";
  return reshape2_rules(ctx, x, runtime_shape,
                        "the shape " + shape_to_string(runtime_shape) + " of input " + slot);
}

ReinterpretMeta flatten_contiguous_range(const OpContext& ctx, TensorMeta x) {
  const std::size_t rank = x.shape.size();
  if (rank == 0) return {Shape{1}, xshape_of(x.shape)};
  const int64_t start_attr = ctx.int_attr("start_axis"), stop_attr = ctx.int_attr("stop_axis");
  const std::size_t start = normalize_axis(ctx, start_attr, rank, "start_axis");
  const std::size_t stop = normalize_axis(ctx, stop_attr, rank, "stop_axis");
  if (start > stop)
    ctx.fail("start_axis " + std::to_string(start_attr) + " comes after stop_axis " +
             std::to_string(stop_attr) + " in " + described(ctx, "X", x.shape));
  Shape out(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(start));
  out.push_back(product(x.shape, start, stop + 1));
  out.insert(out.end(), x.shape.begin() + static_cast<std::ptrdiff_t>(stop) + 1, x.shape.end());
  return {out, xshape_of(x.shape)};
}

ReinterpretMeta flatten2(const OpContext& ctx, TensorMeta x) {
  const auto rank = static_cast<int64_t>(x.shape.size());
  const int64_t axis = ctx.int_attr("axis");
  if (axis < 0 || axis > rank)
    ctx.fail("axis " + std::to_string(axis) + " is outside [0, " + std::to_string(rank) +
             "] for " + described(ctx, "X", x.shape));
  const auto split = static_cast<std::size_t>(axis);
  return {Shape{product(x.shape, 0, split), product(x.shape, split, x.shape.size())},
          xshape_of(x.shape)};
}

ReinterpretMeta squeeze2(const OpContext& ctx, TensorMeta x) {
  const std::size_t rank = x.shape.size();
  const std::vector<int64_t> axes = ctx.ints_attr("axes");
  std::vector<char> drop(rank, 0);
  if (axes.empty()) {
    for (std::size_t d = 0; d < rank; ++d) drop[d] = x.shape[d] == 1;
  } else {
    for (int64_t a : axes) {
      const std::size_t d = normalize_axis(ctx, a, rank, "axes entry");
      drop[d] = x.shape[d] == 1;  // a dim that is not 1 stays (Paddle 2)
    }
  }
  Shape out;
  for (std::size_t d = 0; d < rank; ++d)
    if (!drop[d]) out.push_back(x.shape[d]);
  return {out, xshape_of(x.shape)};
}

ReinterpretMeta unsqueeze2(const OpContext& ctx, TensorMeta x) {
  refuse_runtime_inputs(ctx, {"AxesTensor", "AxesTensorList"}, "axes");
  const std::vector<int64_t> axes = ctx.ints_attr("axes");
  // Which places of the result are new 1s, decided axis by axis.
  std::vector<char> inserted(x.shape.size(), 0);
  for (int64_t a : axes) {
    const std::size_t d = normalize_axis(ctx, a, inserted.size() + 1, "axes entry");
    inserted.insert(inserted.begin() + static_cast<std::ptrdiff_t>(d), 1);
  }
  Shape out;
  std::size_t next = 0;
  for (char is_new : inserted) out.push_back(is_new ? 1 : x.shape[next++]);
  return {out, xshape_of(x.shape)};
}

Shape reinterpret_grad(const OpContext& ctx, TensorMeta xshape, TensorMeta dout) {
  Shape x = shape_from_xshape(ctx, "XShape", xshape);
  const int64_t xn = product(x), gn = product(dout.shape);
  if (xn >= 0 && gn >= 0 && xn != gn)
    ctx.fail(described(ctx, "Out@GRAD", dout.shape) + " holds " + std::to_string(gn) +
             " elements, but the forward X " + shape_to_string(x) + " holds " +
             std::to_string(xn));
  return x;
}

TransposeMeta transpose2(const OpContext& ctx, TensorMeta x) {
  const std::size_t rank = x.shape.size();
  const std::vector<int64_t> axis = ctx.ints_attr("axis");
  const std::string attr_text = "attribute 'axis' " + shape_to_string(axis);
  if (axis.size() != rank)
    ctx.fail(attr_text + " has " + std::to_string(axis.size()) + " entries, but " +
             described(ctx, "X", x.shape) + " has rank " + std::to_string(rank));
  TransposeMeta m;
  std::vector<char> seen(rank, 0);
  for (int64_t a : axis) {
    const std::size_t d = normalize_axis(ctx, a, rank, attr_text + " entry");
    if (seen[d]) ctx.fail(attr_text + " names dim " + std::to_string(d) + " twice");
    seen[d] = 1;
    m.perm.push_back(d);
    m.out_shape.push_back(x.shape[d]);
  }
  m.x_shape = x.shape;
  m.xshape = xshape_of(x.shape);
  return m;
}

TransposeMeta transpose2_grad(const OpContext& ctx, TensorMeta xshape, TensorMeta dout) {
  const Shape x = shape_from_xshape(ctx, "XShape", xshape);
  TransposeMeta m = transpose2(ctx, TensorMeta{x, dout.dtype});
  if (!compatible(dout.shape, m.out_shape))
    ctx.fail(described(ctx, "Out@GRAD", dout.shape) + " has not the forward Out's shape " +
             shape_to_string(m.out_shape));
  return m;
}

SliceMeta slice(const OpContext& ctx, TensorMeta input) {
  refuse_runtime_inputs(ctx, {"StartsTensor", "StartsTensorList"}, "starts");
  refuse_runtime_inputs(ctx, {"EndsTensor", "EndsTensorList"}, "ends");
  const std::size_t rank = input.shape.size();
  const std::vector<int64_t> axes = ctx.ints_attr("axes");
  const std::vector<int64_t> starts = ctx.ints_attr("starts");
  const std::vector<int64_t> ends = ctx.ints_attr("ends");
  if (starts.size() != axes.size() || ends.size() != axes.size())
    ctx.fail("attributes 'axes' " + shape_to_string(axes) + ", 'starts' " +
             shape_to_string(starts) + " and 'ends' " + shape_to_string(ends) +
             " must have one length");
  SliceMeta m;
  m.input_shape = m.sliced_shape = input.shape;
  m.begin.assign(rank, 0);
  std::vector<char> sliced(rank, 0);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const std::size_t d = normalize_axis(ctx, axes[i], rank, "axes entry");
    if (sliced[d]) ctx.fail("attribute 'axes' " + shape_to_string(axes) + " names dim " +
                            std::to_string(d) + " twice");
    sliced[d] = 1;
    const int64_t dim = input.shape[d];
    if (dim < 0) {  // known at run time only
      m.sliced_shape[d] = -1;
      continue;
    }
    const auto clamp = [dim](int64_t v) { return std::clamp(v < 0 ? v + dim : v, int64_t{0}, dim); };
    const int64_t b = clamp(starts[i]), e = clamp(ends[i]);
    m.begin[d] = b;
    m.sliced_shape[d] = std::max<int64_t>(e - b, 0);
  }
  std::vector<char> decreased(rank, 0);
  for (int64_t a : ctx.ints_attr("decrease_axis")) {
    const std::size_t d = normalize_axis(ctx, a, rank, "decrease_axis entry");
    if (m.sliced_shape[d] >= 0 && m.sliced_shape[d] != 1)
      ctx.fail("decrease_axis drops dim " + std::to_string(d) + " of the slice " +
               shape_to_string(m.sliced_shape) + " of " +
               described(ctx, "Input", input.shape) + ", which is not 1");
    decreased[d] = 1;
  }
  for (std::size_t d = 0; d < rank; ++d)
    if (!decreased[d]) m.out_shape.push_back(m.sliced_shape[d]);
  return m;
}

SliceMeta slice_grad(const OpContext& ctx, TensorMeta input, TensorMeta dout) {
  SliceMeta m = slice(ctx, input);
  if (!compatible(dout.shape, m.out_shape))
    ctx.fail(described(ctx, "Out@GRAD", dout.shape) + " has not the slice's shape " +
             shape_to_string(m.out_shape));
  return m;
}

StackMeta stack(const OpContext& ctx, const std::vector<TensorMeta>& xs) {
  if (xs.empty()) ctx.fail("input X is empty");
  StackMeta m;
  m.count = xs.size();
  m.x_shape = xs[0].shape;
  for (std::size_t i = 1; i < xs.size(); ++i) {
    if (xs[i].dtype != xs[0].dtype)
      ctx.fail(ctx.describe_input("X", i) + " has dtype " + std::string(to_string(xs[i].dtype)) +
               ", but " + ctx.describe_input("X", 0) + " has " +
               std::string(to_string(xs[0].dtype)));
    if (!compatible(xs[i].shape, m.x_shape))
      ctx.fail(ctx.describe_input("X", i) + " has shape " + shape_to_string(xs[i].shape) +
               ", but " + ctx.describe_input("X", 0) + " has " + shape_to_string(xs[0].shape));
    for (std::size_t d = 0; d < m.x_shape.size(); ++d)
      if (m.x_shape[d] < 0) m.x_shape[d] = xs[i].shape[d];
  }
  m.axis = normalize_axis(ctx, ctx.int_attr("axis"), m.x_shape.size() + 1, "axis");
  m.out_shape = m.x_shape;
  m.out_shape.insert(m.out_shape.begin() + static_cast<std::ptrdiff_t>(m.axis),
                     static_cast<int64_t>(m.count));
  return m;
}

StackMeta stack_grad(const OpContext& ctx, TensorMeta dy, std::size_t count) {
  if (dy.shape.empty()) ctx.fail(described(ctx, "Y@GRAD", dy.shape) + " must have rank 1 or more");
  StackMeta m;
  m.count = count;
  m.axis = normalize_axis(ctx, ctx.int_attr("axis"), dy.shape.size(), "axis");
  const int64_t n = dy.shape[m.axis];
  if (n >= 0 && n != static_cast<int64_t>(count))
    ctx.fail(described(ctx, "Y@GRAD", dy.shape) + " stacks " + std::to_string(n) +
             " inputs along axis " + std::to_string(m.axis) + ", but X@GRAD has " +
             std::to_string(count));
  m.out_shape = dy.shape;
  m.x_shape = dy.shape;
  m.x_shape.erase(m.x_shape.begin() + static_cast<std::ptrdiff_t>(m.axis));
  return m;
}

}  // namespace ctp::meta
