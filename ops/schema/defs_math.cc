// Arithmetic: products, broadcasting elementwise ops, sums, scaling and
// means, with the grad ops Paddle's backward pass writes for them.
#include <algorithm>

#include "ops/schema/defs_common.h"

namespace ctp::defs {
namespace {

void require_same_dtype(const InferContext& ctx, const Var& x, const Var& y) {
  if (x.dtype != y.dtype)
    ctx.fail(ctx.describe_input("X") + " has dtype " + std::string(to_string(x.dtype)) + ", but " +
             ctx.describe_input("Y") + " has " + std::string(to_string(y.dtype)));
}

// A grad op's input grads take the shapes and dtypes of the forward inputs.
void infer_input_grads(InferContext& ctx, std::initializer_list<const char*> slots) {
  for (const char* slot : slots) {
    const std::string grad_slot = std::string(slot) + "@GRAD";
    if (!ctx.has_output(grad_slot)) continue;
    const Var& forward = ctx.input(slot);
    Shape shape = forward.shape;
    ctx.set_output(grad_slot, shape, forward.dtype);
  }
}

// mul flattens X to 2-D at x_num_col_dims and Y at y_num_col_dims, so
// Out = X[:x_num_col_dims] ++ Y[y_num_col_dims:].
void infer_mul(InferContext& ctx) {
  const Var& x = ctx.input("X");
  const Var& y = ctx.input("Y");
  require_same_dtype(ctx, x, y);
  const int64_t xn = ctx.int_attr("x_num_col_dims");
  const int64_t yn = ctx.int_attr("y_num_col_dims");
  if (xn < 1 || static_cast<std::size_t>(xn) >= x.shape.size())
    ctx.fail(ctx.describe_input("X") + " has rank " + std::to_string(x.shape.size()) +
             ", which must exceed x_num_col_dims " + std::to_string(xn));
  if (yn < 1 || static_cast<std::size_t>(yn) >= y.shape.size())
    ctx.fail(ctx.describe_input("Y") + " has rank " + std::to_string(y.shape.size()) +
             ", which must exceed y_num_col_dims " + std::to_string(yn));
  const int64_t x_width = product(x.shape, static_cast<std::size_t>(xn), x.shape.size());
  const int64_t y_height = product(y.shape, 0, static_cast<std::size_t>(yn));
  if (x_width >= 0 && y_height >= 0 && x_width != y_height)
    ctx.fail(ctx.describe_input("X") + " " + shape_to_string(x.shape) + " flattens to width " +
             std::to_string(x_width) + ", but " + ctx.describe_input("Y") + " " +
             shape_to_string(y.shape) + " flattens to height " + std::to_string(y_height));
  Shape out(x.shape.begin(), x.shape.begin() + xn);
  out.insert(out.end(), y.shape.begin() + yn, y.shape.end());
  ctx.set_output("Out", out, x.dtype);
}

// One broadcast dim: equal dims, or a 1 that stretches; unknown stays unknown
// unless the other side is a real size.
int64_t broadcast_dim(const InferContext& ctx, int64_t a, int64_t b, const std::string& what) {
  if (a == b) return a;
  if (a == 1) return b;
  if (b == 1) return a;
  if (a < 0) return b > 1 ? b : -1;
  if (b < 0) return a > 1 ? a : -1;
  ctx.fail(what + ": " + std::to_string(a) + " vs " + std::to_string(b) + " do not broadcast");
}

void infer_matmul_v2(InferContext& ctx) {
  const Var& x = ctx.input("X");
  const Var& y = ctx.input("Y");
  require_same_dtype(ctx, x, y);
  if (x.shape.empty() || y.shape.empty())
    ctx.fail("inputs must have rank >= 1: " + ctx.describe_input("X") + " " +
             shape_to_string(x.shape) + ", " + ctx.describe_input("Y") + " " +
             shape_to_string(y.shape));
  // A 1-D X is a row [1, k] and a 1-D Y a column [k, 1]; their unit dim is
  // dropped from the result, and transposing them changes nothing.
  const bool x_vector = x.shape.size() == 1;
  const bool y_vector = y.shape.size() == 1;
  Shape xs = x.shape, ys = y.shape;
  if (x_vector) xs.insert(xs.begin(), 1);
  if (y_vector) ys.push_back(1);
  const bool trans_x = ctx.bool_attr("trans_x") && !x_vector;
  const bool trans_y = ctx.bool_attr("trans_y") && !y_vector;
  const std::size_t rx = xs.size(), ry = ys.size();
  const int64_t m = trans_x ? xs[rx - 1] : xs[rx - 2];
  const int64_t kx = trans_x ? xs[rx - 2] : xs[rx - 1];
  const int64_t ky = trans_y ? ys[ry - 1] : ys[ry - 2];
  const int64_t n = trans_y ? ys[ry - 2] : ys[ry - 1];
  merge_dim(ctx, kx, ky,
            "contracted dims of " + ctx.describe_input("X") + " " + shape_to_string(x.shape) +
                " and " + ctx.describe_input("Y") + " " + shape_to_string(y.shape) + " differ");
  const std::size_t bx = rx - 2, by = ry - 2, batch = std::max(bx, by);
  Shape out(batch, 1);
  for (std::size_t i = 0; i < batch; ++i) {
    const int64_t dx = i + bx >= batch ? xs[i + bx - batch] : 1;
    const int64_t dy = i + by >= batch ? ys[i + by - batch] : 1;
    out[i] = broadcast_dim(ctx, dx, dy, "batch dim " + std::to_string(i) + " of X and Y");
  }
  if (!x_vector) out.push_back(m);
  if (!y_vector) out.push_back(n);
  ctx.set_output("Out", out, x.dtype);
}

// Y's dims line up with X's starting at `axis` (-1: at the trailing end), or
// the other way round when Y has the higher rank.
void infer_elementwise(InferContext& ctx) {
  const Var& x = ctx.input("X");
  const Var& y = ctx.input("Y");
  require_same_dtype(ctx, x, y);
  const bool x_bigger = x.shape.size() >= y.shape.size();
  const Shape& big = x_bigger ? x.shape : y.shape;
  const Shape& small = x_bigger ? y.shape : x.shape;
  const auto diff = static_cast<int64_t>(big.size() - small.size());
  int64_t axis = ctx.int_attr("axis");
  if (axis < 0) axis += diff + 1;
  if (axis < 0 || axis > diff)
    ctx.fail("axis " + std::to_string(ctx.int_attr("axis")) + " cannot align " +
             ctx.describe_input("X") + " " + shape_to_string(x.shape) + " with " +
             ctx.describe_input("Y") + " " + shape_to_string(y.shape));
  Shape out = big;
  for (std::size_t i = 0; i < small.size(); ++i) {
    const std::size_t d = static_cast<std::size_t>(axis) + i;
    out[d] = broadcast_dim(ctx, big[d], small[i],
                           ctx.describe_input("X") + " " + shape_to_string(x.shape) + " and " +
                               ctx.describe_input("Y") + " " + shape_to_string(y.shape) +
                               " at dim " + std::to_string(d));
  }
  ctx.set_output("Out", out, x.dtype);
}

void infer_sum(InferContext& ctx) {
  const std::size_t n = ctx.input_count("X");
  if (n == 0) ctx.fail("input X is empty");
  const Var& first = ctx.input("X", 0);
  Shape out = first.shape;
  for (std::size_t i = 1; i < n; ++i) {
    const Var& x = ctx.input("X", i);
    if (x.dtype != first.dtype)
      ctx.fail(ctx.describe_input("X", i) + " has dtype " + std::string(to_string(x.dtype)) +
               ", but " + ctx.describe_input("X", 0) + " has " +
               std::string(to_string(first.dtype)));
    if (!compatible(out, x.shape))
      ctx.fail(ctx.describe_input("X", i) + " has shape " + shape_to_string(x.shape) + ", but " +
               ctx.describe_input("X", 0) + " has " + shape_to_string(first.shape));
    for (std::size_t d = 0; d < out.size(); ++d)
      if (out[d] < 0) out[d] = x.shape[d];
  }
  ctx.set_output("Out", out, first.dtype);
}

// reduce_mean over `dim` (all dims with reduce_all or when every dim is
// listed); reduced dims become 1 with keep_dim, else disappear, leaving a
// 0-D result when none remain (Paddle 2.5 and later).
void infer_reduce_mean(InferContext& ctx) {
  const Var& x = ctx.input("X");
  const std::size_t rank = x.shape.size();
  std::vector<char> reduced(rank, 0);
  Shape dims = ctx.ints_attr("dim");
  const bool all = ctx.bool_attr("reduce_all") || dims.empty();
  for (int64_t d : dims)
    if (rank > 0) reduced[normalize_axis(ctx, d, rank, "dim")] = 1;
  const bool keep = ctx.bool_attr("keep_dim");
  Shape out;
  for (std::size_t i = 0; i < rank; ++i) {
    if (!all && !reduced[i]) out.push_back(x.shape[i]);
    else if (keep) out.push_back(1);
  }
  ctx.set_output("Out", out, x.dtype);
}

std::vector<AttrDef> elementwise_attrs() {
  return {attr("axis", Attribute(int32_t{-1})),
          attr("use_mkldnn", Attribute(false)),
          attr("use_quantizer", Attribute(false)),
          attr("mkldnn_data_type", Attribute("float32")),
          attr("x_data_format", Attribute("")),
          attr("y_data_format", Attribute("")),
          attr("Scale_x", Attribute(1.0f)),
          attr("Scale_y", Attribute(1.0f)),
          attr("Scale_out", Attribute(1.0f))};
}

std::vector<AttrDef> mul_attrs() {
  return {attr("x_num_col_dims", Attribute(int32_t{1})),
          attr("y_num_col_dims", Attribute(int32_t{1})),
          attr("use_mkldnn", Attribute(false)),
          attr("scale_x", Attribute(1.0f)),
          attr("scale_y", floats({1.0f})),
          attr("scale_out", Attribute(1.0f)),
          attr("force_fp32_output", Attribute(false))};
}

std::vector<AttrDef> matmul_v2_attrs() {
  return {attr("trans_x", Attribute(false)), attr("trans_y", Attribute(false)),
          attr("use_mkldnn", Attribute(false)), attr("mkldnn_data_type", Attribute("float32"))};
}

std::vector<AttrDef> reduce_attrs() {
  return {attr("dim", ints({0}), {AttrType::LONGS}),
          attr("keep_dim", Attribute(false)),
          attr("reduce_all", Attribute(false)),
          attr("in_dtype", Attribute(int32_t{-1})),
          attr("out_dtype", Attribute(int32_t{-1})),
          attr("use_mkldnn", Attribute(false))};
}

// X, Y and Out@GRAD in; X@GRAD and Y@GRAD out, each left out when its
// forward input needs no gradient.
OpDef binary_grad_def(const std::string& type, std::vector<AttrDef> attrs) {
  return {type + "_grad",
          {one("X"), one("Y"), one("Out@GRAD")},
          {optional_one("X@GRAD"), optional_one("Y@GRAD")},
          std::move(attrs)};
}

void infer_xy_grads(InferContext& ctx) { infer_input_grads(ctx, {"X", "Y"}); }
void infer_x_grad(InferContext& ctx) { infer_input_grads(ctx, {"X"}); }

}  // namespace

void add_math_op_defs(OpRegistry& r) {
  add_def(r, {"mul", {one("X"), one("Y")}, {one("Out")}, mul_attrs()}, infer_mul);
  add_def(r, binary_grad_def("mul", mul_attrs()), infer_xy_grads);
  add_def(r, {"matmul_v2", {one("X"), one("Y")}, {one("Out")}, matmul_v2_attrs()},
          infer_matmul_v2);
  add_def(r, binary_grad_def("matmul_v2", matmul_v2_attrs()), infer_xy_grads);
  for (const char* type : {"elementwise_add", "elementwise_sub", "elementwise_mul"}) {
    add_def(r, {type, {one("X"), one("Y")}, {one("Out")}, elementwise_attrs()},
            infer_elementwise);
    add_def(r, binary_grad_def(type, elementwise_attrs()), infer_xy_grads);
  }
  add_def(r,
          {"sum",
           {many("X")},
           {one("Out")},
           {attr("use_mkldnn", Attribute(false)), attr("mkldnn_data_type", Attribute("float32"))}},
          infer_sum);
  add_def(r,
          {"scale",
           {one("X"), optional_one("ScaleTensor")},
           {one("Out")},
           {attr("scale", Attribute(1.0f)), attr("bias", Attribute(0.0f)),
            attr("bias_after_scale", Attribute(true))}},
          [](InferContext& ctx) { ctx.pass_through("X", "Out"); });
  add_def(r, {"mean", {one("X")}, {one("Out")}, {}}, [](InferContext& ctx) {
    ctx.set_output("Out", Shape{}, ctx.input("X").dtype);
  });
  add_def(r, {"mean_grad", {one("X"), one("Out@GRAD")}, {optional_one("X@GRAD")}, {}},
          infer_x_grad);
  add_def(r, {"reduce_mean", {one("X")}, {one("Out")}, reduce_attrs()}, infer_reduce_mean);
  add_def(r,
          {"reduce_mean_grad",
           {one("X"), optional_one("Out"), one("Out@GRAD")},
           {optional_one("X@GRAD")},
           reduce_attrs()},
          infer_x_grad);
}

CTP_REGISTER_OP_DEFS(add_math_op_defs);

}  // namespace ctp::defs
