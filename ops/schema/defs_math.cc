// Arithmetic: products, broadcasting elementwise ops, sums, scaling and
// means, with the grad ops Paddle's backward pass writes for them.
#include "ops/schema/defs_common.h"
#include "ops/schema/meta_math.h"

namespace ctp::defs {
namespace {

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

// X and Y in, Out out with X's dtype and the shape the op's rule gives.
template <auto rule>
void infer_binary(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  ctx.set_output("Out", rule(ctx, x, ctx.input_meta("Y")).out_shape, x.dtype);
}

// The gradient of a binary op: its rule checks X, Y and Out@GRAD, then the
// input grads take the shapes of the inputs.
template <auto grad_rule>
void infer_binary_grad(InferContext& ctx) {
  grad_rule(ctx, ctx.input_meta("X"), ctx.input_meta("Y"), ctx.input_meta("Out@GRAD"));
  infer_input_grads(ctx, {"X", "Y"});
}

void infer_elementwise_div_grad(InferContext& ctx) {
  meta::elementwise_div_grad(ctx, ctx.input_meta("X"), ctx.input_meta("Y"), ctx.input_meta("Out"),
                             ctx.input_meta("Out@GRAD"));
  infer_input_grads(ctx, {"X", "Y"});
}

void infer_sum(InferContext& ctx) {
  std::vector<TensorMeta> xs;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) xs.push_back(ctx.input_meta("X", i));
  const Shape out = meta::sum(ctx, xs);
  ctx.set_output("Out", out, xs[0].dtype);
}

void infer_mean_grad(InferContext& ctx) {
  meta::mean_grad(ctx, ctx.input_meta("Out@GRAD"));
  infer_input_grads(ctx, {"X"});
}

void infer_reduce_mean(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  ctx.set_output("Out", meta::reduce_mean(ctx, x).out_shape, x.dtype);
}

void infer_reduce_mean_grad(InferContext& ctx) {
  meta::reduce_mean_grad(ctx, ctx.input_meta("X"), ctx.input_meta("Out@GRAD"));
  infer_input_grads(ctx, {"X"});
}

void infer_reduce_sum(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  ctx.set_output("Out", meta::reduce_sum(ctx, x).out_shape, x.dtype);
}

void infer_reduce_sum_grad(InferContext& ctx) {
  meta::reduce_sum_grad(ctx, ctx.input_meta("X"), ctx.input_meta("Out@GRAD"));
  infer_input_grads(ctx, {"X"});
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

// Paddle's matmul (v1) maker, its oneDNN fusion attributes included (the
// rules refuse them when set).
std::vector<AttrDef> matmul_attrs() {
  return {attr("transpose_X", Attribute(false)),
          attr("transpose_Y", Attribute(false)),
          attr("alpha", Attribute(1.0f)),
          attr("head_number", Attribute(int32_t{1})),
          attr("use_mkldnn", Attribute(false)),
          attr("mkldnn_data_type", Attribute("float32")),
          attr("use_quantizer", Attribute(false)),
          attr("force_fp32_output", Attribute(false)),
          attr("Scale_x", Attribute(1.0f)),
          attr("Scale_y", Attribute(1.0f)),
          attr("Scale_out", Attribute(1.0f)),
          attr("fused_reshape_X", ints({})),
          attr("fused_reshape_Y", ints({})),
          attr("fused_reshape_Out", ints({})),
          attr("fused_transpose_X", ints({})),
          attr("fused_transpose_Y", ints({})),
          attr("fused_transpose_Out", ints({}))};
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
// forward input needs no gradient. X and Y shape-only when the gradient
// reads only their shapes.
OpDef binary_grad_def(const std::string& type, std::vector<AttrDef> attrs,
                      bool reads_only_operand_shapes = false) {
  SlotDef x = one("X"), y = one("Y");
  x.shape_only = y.shape_only = reads_only_operand_shapes;
  return {type + "_grad",
          {std::move(x), std::move(y), one("Out@GRAD")},
          {optional_one("X@GRAD"), optional_one("Y@GRAD")},
          std::move(attrs)};
}

// X, Y and Out@GRAD in, X@GRAD and Y@GRAD out: mul, matmul_v2, elementwise_*.
GradMaker binary_grad(std::string type) {
  return grad_op(std::move(type), {"X", "Y", "Out@GRAD"}, {"X@GRAD", "Y@GRAD"});
}

// sum's gradient reaches each input unchanged: one `scale` (by 1) per input
// that needs it, as Paddle's SumGradMaker writes (an @EMPTY@ one is dropped
// by the backward pass).
std::vector<Op> make_sum_grad(const GradMakerContext& ctx) {
  std::vector<Op> ops;
  const std::vector<std::string> out_grad = ctx.output_grad("Out");
  for (const std::string& x_grad : ctx.input_grad("X", /*drop_empty=*/false))
    ops.push_back(Op("scale", {{"X", out_grad}}, {{"Out", {x_grad}}},
                     {{"scale", Attribute(1.0f)}}));
  return ops;
}

// scale's gradient is a scale by the same factor without the bias.
std::vector<Op> make_scale_grad(const GradMakerContext& ctx) {
  Op grad("scale", {{"X", ctx.output_grad("Out")}}, {{"Out", ctx.input_grad("X")}}, {});
  if (ctx.has_input("ScaleTensor")) grad.set_input("ScaleTensor", ctx.input("ScaleTensor"));
  const Attribute* scale = ctx.attr("scale");
  grad.set_attr("scale", scale ? *scale : Attribute(1.0f));
  grad.set_attr("bias", Attribute(0.0f));
  grad.set_attr("bias_after_scale", Attribute(true));
  return {grad};
}

}  // namespace

void add_math_op_defs(OpRegistry& r) {
  add_def(r, {"mul", {one("X"), one("Y")}, {one("Out")}, mul_attrs()}, infer_binary<meta::mul>,
          binary_grad("mul_grad"));
  add_def(r, binary_grad_def("mul", mul_attrs()), infer_binary_grad<meta::mul_grad>);
  add_def(r, {"matmul_v2", {one("X"), one("Y")}, {one("Out")}, matmul_v2_attrs()},
          infer_binary<meta::matmul_v2>, binary_grad("matmul_v2_grad"));
  add_def(r, binary_grad_def("matmul_v2", matmul_v2_attrs()),
          infer_binary_grad<meta::matmul_v2_grad>);
  add_def(r, {"matmul", {one("X"), one("Y")}, {one("Out")}, matmul_attrs()},
          infer_binary<meta::matmul>, binary_grad("matmul_grad"));
  add_def(r, binary_grad_def("matmul", matmul_attrs()), infer_binary_grad<meta::matmul_grad>);
  for (const char* type :
       {"elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div"}) {
    const std::string grad = std::string(type) + "_grad";
    // Paddle's div grad maker also passes Out.
    add_def(r, {type, {one("X"), one("Y")}, {one("Out")}, elementwise_attrs()},
            infer_binary<meta::elementwise>,
            grad == "elementwise_div_grad"
                ? grad_op(grad, {"X", "Y", "Out", "Out@GRAD"}, {"X@GRAD", "Y@GRAD"})
                : binary_grad(grad));
  }
  // add's and sub's gradients read only the shapes of X and Y (Paddle's
  // ElementwiseGradNoBufVarsInferer), mul's both operands.
  for (const char* type : {"elementwise_add", "elementwise_sub", "elementwise_mul"})
    add_def(r,
            binary_grad_def(type, elementwise_attrs(),
                            std::string_view(type) != "elementwise_mul"),
            infer_binary_grad<meta::elementwise_grad>);
  // Paddle's div grad maker also passes Out: dX = dOut / Y and
  // dY = -dOut * Out / Y read no element of X.
  add_def(r,
          {"elementwise_div_grad",
           {shape_only(one("X")), one("Y"), one("Out"), one("Out@GRAD")},
           {optional_one("X@GRAD"), optional_one("Y@GRAD")},
           elementwise_attrs()},
          infer_elementwise_div_grad);
  add_def(r,
          {"sum",
           {many("X")},
           {one("Out")},
           {attr("use_mkldnn", Attribute(false)), attr("mkldnn_data_type", Attribute("float32"))}},
          infer_sum, GradMaker::ops(make_sum_grad));
  add_def(r,
          {"scale",
           {one("X"), optional_one("ScaleTensor")},
           {one("Out")},
           {attr("scale", Attribute(1.0f)), attr("bias", Attribute(0.0f)),
            attr("bias_after_scale", Attribute(true))}},
          [](InferContext& ctx) { ctx.pass_through("X", "Out"); },
          GradMaker::ops(make_scale_grad));
  add_def(r, {"mean", {one("X")}, {one("Out")}, {}},
          [](InferContext& ctx) { ctx.set_output("Out", Shape{}, ctx.input("X").dtype); },
          grad_op("mean_grad", {"X", "Out@GRAD"}, {"X@GRAD"}));
  // mean's and the reductions' gradients read X only for its shape.
  add_def(r, {"mean_grad", {shape_only(one("X")), one("Out@GRAD")}, {optional_one("X@GRAD")}, {}},
          infer_mean_grad);
  // Paddle's reduce_mean and reduce_sum grad makers pass X (for its shape), not Out.
  add_def(r, {"reduce_mean", {one("X")}, {one("Out")}, reduce_attrs()}, infer_reduce_mean,
          grad_op("reduce_mean_grad", {"X", "Out@GRAD"}, {"X@GRAD"}));
  add_def(r, {"reduce_sum", {one("X")}, {one("Out")}, reduce_attrs()}, infer_reduce_sum,
          grad_op("reduce_sum_grad", {"X", "Out@GRAD"}, {"X@GRAD"}));
  add_def(r,
          {"reduce_sum_grad",
           {shape_only(one("X")), optional_one("Out"), one("Out@GRAD")},
           {optional_one("X@GRAD")},
           reduce_attrs()},
          infer_reduce_sum_grad);
  add_def(r,
          {"reduce_mean_grad",
           {shape_only(one("X")), optional_one("Out"), one("Out@GRAD")},
           {optional_one("X@GRAD")},
           reduce_attrs()},
          infer_reduce_mean_grad);
}

CTP_REGISTER_OP_DEFS(add_math_op_defs);

}  // namespace ctp::defs
