#include "ops/schema/meta_math.h"

#include <algorithm>

#include "ops/schema/shape_rules.h"

namespace ctp::meta {
namespace {

std::string described(const OpContext& ctx, std::string_view slot, const Shape& shape) {
  return ctx.describe_input(slot) + " " + shape_to_string(shape);
}

std::string bool_text(bool b) { return b ? "true" : "false"; }

}  // namespace

void require_same_dtype(const OpContext& ctx, std::string_view a_slot, TensorMeta a,
                        std::string_view b_slot, TensorMeta b) {
  if (a.dtype != b.dtype)
    ctx.fail(ctx.describe_input(a_slot) + " has dtype " + std::string(to_string(a.dtype)) +
             ", but " + ctx.describe_input(b_slot) + " has " + std::string(to_string(b.dtype)));
}

void require_shape(const OpContext& ctx, std::string_view slot, const Shape& actual,
                   const Shape& expected) {
  if (!compatible(actual, expected))
    ctx.fail(ctx.describe_input(slot) + " has shape " + shape_to_string(actual) + ", expected " +
             shape_to_string(expected));
}

MulMeta mul(const OpContext& ctx, TensorMeta x, TensorMeta y) {
  require_same_dtype(ctx, "X", x, "Y", y);
  const int64_t xn = ctx.int_attr("x_num_col_dims");
  const int64_t yn = ctx.int_attr("y_num_col_dims");
  const auto check = [&](int64_t n, const char* attr, const char* slot, const Shape& shape) {
    if (n < 1 || n >= static_cast<int64_t>(shape.size()))
      ctx.fail(std::string(attr) + " " + std::to_string(n) + " does not split " +
               described(ctx, slot, shape) + " (it must be at least 1 and below the rank)");
  };
  check(xn, "x_num_col_dims", "X", x.shape);
  check(yn, "y_num_col_dims", "Y", y.shape);
  const auto xc = static_cast<std::size_t>(xn), yc = static_cast<std::size_t>(yn);
  MulMeta d;
  d.m = product(x.shape, 0, xc);
  d.k = product(x.shape, xc, x.shape.size());
  const int64_t y_height = product(y.shape, 0, yc);
  d.n = product(y.shape, yc, y.shape.size());
  if (d.k >= 0 && y_height >= 0 && d.k != y_height)
    ctx.fail(described(ctx, "X", x.shape) + " flattens to width " + std::to_string(d.k) +
             ", but " + described(ctx, "Y", y.shape) + " flattens to height " +
             std::to_string(y_height));
  if (d.k < 0) d.k = y_height;
  d.out_shape.assign(x.shape.begin(), x.shape.begin() + xn);
  d.out_shape.insert(d.out_shape.end(), y.shape.begin() + yn, y.shape.end());
  return d;
}

MulMeta mul_grad(const OpContext& ctx, TensorMeta x, TensorMeta y, TensorMeta dout) {
  MulMeta d = mul(ctx, x, y);
  require_same_dtype(ctx, "X", x, "Out@GRAD", dout);
  const int64_t expected = d.m < 0 || d.n < 0 ? -1 : d.m * d.n;
  const int64_t actual = product(dout.shape);
  if (expected >= 0 && actual >= 0 && actual != expected)
    ctx.fail(described(ctx, "Out@GRAD", dout.shape) + " has " + std::to_string(actual) +
             " elements, expected " + std::to_string(expected) + " (Out is " +
             shape_to_string(d.out_shape) + ")");
  return d;
}

namespace {

// matmul_v2's and matmul's shared rules, given the transposes asked for.
MatmulMeta matmul_rules(const OpContext& ctx, TensorMeta x, TensorMeta y, bool trans_x,
                        bool trans_y) {
  require_same_dtype(ctx, "X", x, "Y", y);
  if (x.shape.empty() || y.shape.empty())
    ctx.fail("inputs must have rank 1 or more: " + described(ctx, "X", x.shape) + ", " +
             described(ctx, "Y", y.shape));
  const bool x_vector = x.shape.size() == 1, y_vector = y.shape.size() == 1;
  Shape xs = x.shape, ys = y.shape;
  if (x_vector) xs.insert(xs.begin(), 1);
  if (y_vector) ys.push_back(1);
  MatmulMeta d;
  d.trans_x = trans_x && !x_vector;
  d.trans_y = trans_y && !y_vector;
  const std::size_t rx = xs.size(), ry = ys.size();
  d.m = d.trans_x ? xs[rx - 1] : xs[rx - 2];
  d.k = d.trans_x ? xs[rx - 2] : xs[rx - 1];
  const int64_t ky = d.trans_y ? ys[ry - 1] : ys[ry - 2];
  d.n = d.trans_y ? ys[ry - 2] : ys[ry - 1];
  d.k = merge_dim(ctx, d.k, ky,
                  "contracted dims of " + described(ctx, "X", x.shape) + " and " +
                      described(ctx, "Y", y.shape) + " (trans_x " + bool_text(d.trans_x) +
                      ", trans_y " + bool_text(d.trans_y) + ") differ");
  d.x_matrix = product(xs, rx - 2, rx);
  d.y_matrix = product(ys, ry - 2, ry);
  d.batch =
      broadcast(ctx, Shape(xs.begin(), xs.end() - 2), Shape(ys.begin(), ys.end() - 2), -1,
                "the batch dims of " + described(ctx, "X", x.shape) + " and " +
                    described(ctx, "Y", y.shape));
  d.out_shape = d.batch.out_shape;
  if (!x_vector) d.out_shape.push_back(d.m);
  if (!y_vector) d.out_shape.push_back(d.n);
  return d;
}

}  // namespace

MatmulMeta matmul_v2(const OpContext& ctx, TensorMeta x, TensorMeta y) {
  return matmul_rules(ctx, x, y, ctx.bool_attr("trans_x"), ctx.bool_attr("trans_y"));
}

MatmulMeta matmul_v2_grad(const OpContext& ctx, TensorMeta x, TensorMeta y, TensorMeta dout) {
  MatmulMeta d = matmul_v2(ctx, x, y);
  require_same_dtype(ctx, "X", x, "Out@GRAD", dout);
  require_shape(ctx, "Out@GRAD", dout.shape, d.out_shape);
  return d;
}

MatmulMeta matmul(const OpContext& ctx, TensorMeta x, TensorMeta y) {
  if (const int64_t heads = ctx.int_attr("head_number"); heads != 1)
    ctx.fail("head_number " + std::to_string(heads) + " is not supported (only 1)");
  for (const char* fused : {"fused_reshape_X", "fused_reshape_Y", "fused_reshape_Out",
                            "fused_transpose_X", "fused_transpose_Y", "fused_transpose_Out"})
    if (!ctx.ints_attr(fused).empty())
      ctx.fail(std::string("attribute ") + fused + " (a oneDNN fusion) is not supported");
  MatmulMeta d =
      matmul_rules(ctx, x, y, ctx.bool_attr("transpose_X"), ctx.bool_attr("transpose_Y"));
  d.alpha = ctx.float_attr("alpha");
  if (x.shape.size() == 1 && y.shape.size() == 1) d.out_shape = {1};
  return d;
}

MatmulMeta matmul_grad(const OpContext& ctx, TensorMeta x, TensorMeta y, TensorMeta dout) {
  MatmulMeta d = matmul(ctx, x, y);
  require_same_dtype(ctx, "X", x, "Out@GRAD", dout);
  require_shape(ctx, "Out@GRAD", dout.shape, d.out_shape);
  return d;
}

Broadcast broadcast(const OpContext& ctx, const Shape& x, const Shape& y, int64_t axis,
                    const std::string& pair) {
  Broadcast b;
  if (x == y) {
    b.x = b.y = b.out_shape = x;
    b.same_shape = true;
    return b;
  }
  const bool x_is_big = x.size() >= y.size();
  const Shape& big = x_is_big ? x : y;
  Shape small = x_is_big ? y : x;
  const auto big_rank = static_cast<int64_t>(big.size());
  const int64_t given_axis = axis;
  if (axis == -1) axis = big_rank - static_cast<int64_t>(small.size());
  // Older Paddle programs align a Y with trailing 1s (e.g. [3, 1] at axis 1
  // of a rank-2 X): those trailing 1s are dropped.
  while (axis >= 0 && axis + static_cast<int64_t>(small.size()) > big_rank && !small.empty() &&
         small.back() == 1)
    small.pop_back();
  if (axis < 0 || axis > big_rank || axis + static_cast<int64_t>(small.size()) > big_rank)
    ctx.fail("axis " + std::to_string(given_axis) + " cannot align " + pair);
  Shape padded(big.size(), 1);
  std::copy(small.begin(), small.end(), padded.begin() + axis);
  b.out_shape.resize(big.size());
  for (std::size_t d = 0; d < big.size(); ++d)
    b.out_shape[d] = broadcast_dim(ctx, big[d], padded[d], pair + " at dim " + std::to_string(d));
  b.x = x_is_big ? big : padded;
  b.y = x_is_big ? padded : big;
  return b;
}

Broadcast elementwise(const OpContext& ctx, TensorMeta x, TensorMeta y) {
  require_same_dtype(ctx, "X", x, "Y", y);
  return broadcast(ctx, x.shape, y.shape, ctx.int_attr("axis"),
                   described(ctx, "X", x.shape) + " and " + described(ctx, "Y", y.shape));
}

Broadcast elementwise_grad(const OpContext& ctx, TensorMeta x, TensorMeta y, TensorMeta dout) {
  Broadcast b = elementwise(ctx, x, y);
  require_shape(ctx, "Out@GRAD", dout.shape, b.out_shape);
  return b;
}

Broadcast elementwise_div_grad(const OpContext& ctx, TensorMeta x, TensorMeta y, TensorMeta out,
                               TensorMeta dout) {
  Broadcast b = elementwise_grad(ctx, x, y, dout);
  require_same_dtype(ctx, "X", x, "Out", out);
  require_shape(ctx, "Out", out.shape, b.out_shape);
  return b;
}

Shape sum(const OpContext& ctx, const std::vector<TensorMeta>& xs) {
  if (xs.empty()) ctx.fail("input X is empty");
  Shape out = xs[0].shape;
  for (std::size_t i = 1; i < xs.size(); ++i) {
    if (xs[i].dtype != xs[0].dtype)
      ctx.fail(ctx.describe_input("X", i) + " has dtype " + std::string(to_string(xs[i].dtype)) +
               ", but " + ctx.describe_input("X", 0) + " has " +
               std::string(to_string(xs[0].dtype)));
    if (!compatible(out, xs[i].shape))
      ctx.fail(ctx.describe_input("X", i) + " has shape " + shape_to_string(xs[i].shape) +
               ", but " + ctx.describe_input("X", 0) + " has " + shape_to_string(xs[0].shape));
    for (std::size_t d = 0; d < out.size(); ++d)
      if (out[d] < 0) out[d] = xs[i].shape[d];
  }
  return out;
}

void mean_grad(const OpContext& ctx, TensorMeta dout) {
  const int64_t n = product(dout.shape);
  if (n >= 0 && n != 1)
    ctx.fail(described(ctx, "Out@GRAD", dout.shape) + " must hold one element");
}

ReduceMeta reduce_mean(const OpContext& ctx, TensorMeta x) {
  const std::size_t rank = x.shape.size();
  ReduceMeta r;
  r.reduced.assign(rank, 0);
  const std::vector<int64_t> dims = ctx.ints_attr("dim");
  const bool all = ctx.bool_attr("reduce_all") || dims.empty() || rank == 0;
  if (all) r.reduced.assign(rank, 1);
  else
    for (int64_t d : dims) r.reduced[normalize_axis(ctx, d, rank, "dim")] = 1;
  r.keep_dim = ctx.bool_attr("keep_dim");
  for (std::size_t i = 0; i < rank; ++i) {
    if (!r.reduced[i]) r.out_shape.push_back(x.shape[i]);
    else if (r.keep_dim) r.out_shape.push_back(1);
  }
  return r;
}

ReduceMeta reduce_mean_grad(const OpContext& ctx, TensorMeta x, TensorMeta dout) {
  ReduceMeta r = reduce_mean(ctx, x);
  const int64_t expected = product(r.out_shape), actual = product(dout.shape);
  if (expected >= 0 && actual >= 0 && actual != expected)
    ctx.fail(described(ctx, "Out@GRAD", dout.shape) + " has " + std::to_string(actual) +
             " elements, expected " + std::to_string(expected) + " (Out is " +
             shape_to_string(r.out_shape) + ")");
  return r;
}

namespace {

void require_out_dtype_of_x(const OpContext& ctx, TensorMeta x) {
  const DataType out = ctx.dtype_attr("out_dtype", x.dtype);
  if (out != x.dtype)
    ctx.fail("out_dtype " + std::string(to_string(out)) + " differs from " +
             ctx.describe_input("X") + "'s dtype " + std::string(to_string(x.dtype)) +
             "; ctp sums in X's dtype (cast X first)");
}

}  // namespace

ReduceMeta reduce_sum(const OpContext& ctx, TensorMeta x) {
  require_out_dtype_of_x(ctx, x);
  return reduce_mean(ctx, x);
}

ReduceMeta reduce_sum_grad(const OpContext& ctx, TensorMeta x, TensorMeta dout) {
  require_out_dtype_of_x(ctx, x);
  return reduce_mean_grad(ctx, x, dout);
}

}  // namespace ctp::meta
