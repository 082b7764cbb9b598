// Ops that reshape and rearrange tensors: reshape2, flatten_contiguous_range,
// squeeze2, unsqueeze2, transpose2, slice and stack, with the grad ops
// Paddle's backward pass writes for them. Slots and attributes follow
// Paddle's op makers (the oneDNN switches included, which change nothing
// here); XShape is optional, as inference models saved without it show.
#include "ops/schema/defs_common.h"
#include "ops/schema/meta_shape.h"

namespace ctp::defs {
namespace {

template <auto rule>
void infer_reinterpret(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  const DataType dtype = x.dtype;
  const meta::ReinterpretMeta m = rule(ctx, x);
  ctx.set_output("XShape", m.xshape, dtype);
  ctx.set_output("Out", m.out_shape, dtype);
}

void infer_reinterpret_grad(InferContext& ctx) {
  const TensorMeta dout = ctx.input_meta("Out@GRAD");
  const Shape x = meta::reinterpret_grad(ctx, ctx.input_meta("XShape"), dout);
  ctx.set_output("X@GRAD", x, dout.dtype);
}

void infer_transpose2(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  const DataType dtype = x.dtype;
  const meta::TransposeMeta m = meta::transpose2(ctx, x);
  ctx.set_output("XShape", m.xshape, dtype);
  ctx.set_output("Out", m.out_shape, dtype);
}

void infer_transpose2_grad(InferContext& ctx) {
  const TensorMeta dout = ctx.input_meta("Out@GRAD");
  const meta::TransposeMeta m = meta::transpose2_grad(ctx, ctx.input_meta("XShape"), dout);
  ctx.set_output("X@GRAD", m.x_shape, dout.dtype);
}

void infer_slice(InferContext& ctx) {
  const TensorMeta input = ctx.input_meta("Input");
  ctx.set_output("Out", meta::slice(ctx, input).out_shape, input.dtype);
}

void infer_slice_grad(InferContext& ctx) {
  const TensorMeta input = ctx.input_meta("Input");
  const meta::SliceMeta m = meta::slice_grad(ctx, input, ctx.input_meta("Out@GRAD"));
  ctx.set_output("Input@GRAD", m.input_shape, input.dtype);
}

void infer_stack(InferContext& ctx) {
  std::vector<TensorMeta> xs;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) xs.push_back(ctx.input_meta("X", i));
  const meta::StackMeta m = meta::stack(ctx, xs);
  ctx.set_output("Y", m.out_shape, xs[0].dtype);
}

void infer_stack_grad(InferContext& ctx) {
  const TensorMeta dy = ctx.input_meta("Y@GRAD");
  const std::size_t count = ctx.output_count("X@GRAD");
  const meta::StackMeta m = meta::stack_grad(ctx, dy, count);
  for (std::size_t i = 0; i < count; ++i)
    if (ctx.output_names("X@GRAD")[i] != "@EMPTY@") ctx.set_output("X@GRAD", i, m.x_shape, dy.dtype);
}

// Attributes of list type that Paddle writes as INTS (LONGS accepted).
AttrDef int_list(std::string name) { return attr(std::move(name), ints({}), {AttrType::LONGS}); }

std::vector<AttrDef> onednn_attrs(std::vector<AttrDef> own) {
  own.push_back(attr("use_mkldnn", Attribute(false)));
  own.push_back(attr("mkldnn_data_type", Attribute("float32")));
  return own;
}

std::vector<AttrDef> reshape2_attrs() {
  return onednn_attrs({int_list("shape"), attr("use_quantizer", Attribute(false))});
}
std::vector<AttrDef> flatten_attrs() {
  return onednn_attrs(
      {attr("start_axis", Attribute(int32_t{1})), attr("stop_axis", Attribute(int32_t{1}))});
}
std::vector<AttrDef> flatten2_attrs() { return onednn_attrs({attr("axis", Attribute(int32_t{1}))}); }
std::vector<AttrDef> axes_attrs() { return onednn_attrs({int_list("axes")}); }
std::vector<AttrDef> transpose2_attrs() {
  return onednn_attrs({required("axis", AttrType::INTS, {AttrType::LONGS}),
                       attr("data_format", Attribute("AnyLayout")),
                       attr("use_quantizer", Attribute(false))});
}
std::vector<AttrDef> slice_attrs() {
  return onednn_attrs({required("axes", AttrType::INTS, {AttrType::LONGS}), int_list("starts"),
                       int_list("ends"), int_list("infer_flags"), int_list("decrease_axis")});
}
std::vector<SlotDef> slice_tensor_inputs(std::vector<SlotDef> own) {
  for (const char* s : {"StartsTensor", "EndsTensor"}) own.push_back(optional_one(s));
  for (const char* s : {"StartsTensorList", "EndsTensorList"}) own.push_back(optional_many(s));
  return own;
}

// An op that writes Out (and XShape) from X, and its `<type>_grad` that
// writes X@GRAD from XShape and Out@GRAD (Paddle's grad makers of the "2"
// ops pass XShape, not X); `extra_inputs` are optional run-time attribute
// inputs both take.
void add_xshape_pair(OpRegistry& r, const std::string& type, std::vector<AttrDef> attrs,
                     std::vector<SlotDef> extra_inputs, InferBody infer, InferBody infer_grad) {
  std::vector<SlotDef> inputs = {one("X")};
  std::vector<SlotDef> grad_inputs = {one("XShape"), one("Out@GRAD")};
  std::vector<std::string> maker_inputs = {"XShape", "Out@GRAD"};
  inputs.insert(inputs.end(), extra_inputs.begin(), extra_inputs.end());
  grad_inputs.insert(grad_inputs.end(), extra_inputs.begin(), extra_inputs.end());
  for (const SlotDef& extra : extra_inputs) maker_inputs.push_back(extra.name);
  add_def(r, {type, inputs, {one("Out"), optional_one("XShape")}, attrs}, std::move(infer),
          grad_op(type + "_grad", maker_inputs, {"X@GRAD"}));
  add_def(r, {type + "_grad", grad_inputs, {optional_one("X@GRAD")}, attrs},
          std::move(infer_grad));
}

}  // namespace

void add_shape_op_defs(OpRegistry& r) {
  add_xshape_pair(r, "reshape2", reshape2_attrs(),
                  {optional_one("Shape"), optional_many("ShapeTensor")},
                  infer_reinterpret<meta::reshape2>, infer_reinterpret_grad);
  add_xshape_pair(r, "flatten_contiguous_range", flatten_attrs(), {},
                  infer_reinterpret<meta::flatten_contiguous_range>, infer_reinterpret_grad);
  // shape: Input's dims as INT32 [rank]; no gradient (Paddle's has none).
  add_def(r, {"shape", {shape_only(one("Input"))}, {one("Out")}, onednn_attrs({})},
          [](InferContext& ctx) {
            const TensorMeta in = ctx.input_meta("Input");
            ctx.set_output("Out", {static_cast<int64_t>(in.shape.size())}, DataType::INT32);
          },
          GradMaker::none());
  add_xshape_pair(r, "flatten2", flatten2_attrs(), {}, infer_reinterpret<meta::flatten2>,
                  infer_reinterpret_grad);
  add_xshape_pair(r, "squeeze2", axes_attrs(), {}, infer_reinterpret<meta::squeeze2>,
                  infer_reinterpret_grad);
  add_xshape_pair(r, "unsqueeze2", axes_attrs(),
                  {optional_one("AxesTensor"), optional_many("AxesTensorList")},
                  infer_reinterpret<meta::unsqueeze2>, infer_reinterpret_grad);
  add_xshape_pair(r, "transpose2", transpose2_attrs(), {}, infer_transpose2,
                  infer_transpose2_grad);
  add_def(r, {"slice", slice_tensor_inputs({one("Input")}), {one("Out")}, slice_attrs()},
          infer_slice,
          grad_op("slice_grad",
                  {"Input", "Out@GRAD", "StartsTensor", "EndsTensor", "StartsTensorList",
                   "EndsTensorList"},
                  {"Input@GRAD"}));
  add_def(r,
          {"slice_grad", slice_tensor_inputs({shape_only(one("Input")), one("Out@GRAD")}),
           {optional_one("Input@GRAD")}, slice_attrs()},
          infer_slice_grad);
  const std::vector<AttrDef> stack_attrs = {attr("axis", Attribute(int32_t{0})),
                                            attr("use_mkldnn", Attribute(false))};
  // X@GRAD names @EMPTY@ for an input that needs no gradient; stack_grad skips it.
  add_def(r, {"stack", {many("X")}, {one("Y")}, stack_attrs}, infer_stack,
          grad_op("stack_grad", {"Y@GRAD"}, {"X@GRAD"}));
  add_def(r, {"stack_grad", {one("Y@GRAD")}, {optional_many("X@GRAD")}, stack_attrs},
          infer_stack_grad);
}

CTP_REGISTER_OP_DEFS(add_shape_op_defs);

}  // namespace ctp::defs
