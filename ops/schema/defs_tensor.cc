// Ops that create, move and reshape tensors: initializers, feed/fetch,
// assign, cast, split, concat, fill_zeros_like and coalesce_tensor.
#include <cstdint>

#include "ops/schema/defs_common.h"
#include "ops/schema/meta_tensor.h"

namespace ctp::defs {
namespace {

constexpr int32_t kFP32 = static_cast<int32_t>(DataType::FP32);

// The shape an initializer writes, as Paddle infers it before run time: a
// ShapeTensorList gives the rank (dims unknown); a ShapeTensor gives the rank
// through its element count unless the `shape` attribute is set; otherwise
// the `shape` attribute. nullopt when not even the rank is known yet.
std::optional<Shape> initializer_shape(const InferContext& ctx) {
  if (ctx.has_input("ShapeTensorList"))
    return Shape(ctx.input_count("ShapeTensorList"), -1);
  Shape shape = ctx.ints_attr("shape");
  for (int64_t d : shape)
    if (d < -1) ctx.fail("attribute 'shape' " + shape_to_string(shape) + " has a negative dim");
  if (ctx.has_input("ShapeTensor") && shape.empty()) {
    const int64_t rank = ctx.input("ShapeTensor").numel();
    if (rank < 0) return std::nullopt;
    return Shape(static_cast<std::size_t>(rank), -1);
  }
  return shape;
}

void infer_initializer(InferContext& ctx) {
  const DataType dtype = ctx.dtype_attr("dtype");
  if (auto shape = initializer_shape(ctx)) {
    ctx.set_output("Out", *shape, dtype);
  } else {
    ctx.set_output_dtype("Out", dtype);  // the declared shape is all there is
  }
}

// The attributes Paddle gives all three initializers; shape was INTS before 2.0.
std::vector<AttrDef> initializer_attrs(std::vector<AttrDef> own) {
  std::vector<AttrDef> attrs = {
      attr("shape", longs({}), {AttrType::INTS}),
      attr("dtype", Attribute(kFP32)),
  };
  attrs.insert(attrs.end(), own.begin(), own.end());
  return attrs;
}

void infer_split(InferContext& ctx) {
  const Var& x = ctx.input("X");
  const std::size_t outs = ctx.output_count("Out");
  if (ctx.has_input("AxisTensor")) {
    // The axis is known only at run time, so no dim is.
    for (std::size_t i = 0; i < outs; ++i)
      ctx.set_output("Out", i, Shape(x.shape.size(), -1), x.dtype);
    return;
  }
  Shape out = x.shape;
  if (ctx.int_attr("num") <= 0 && ctx.has_input("SectionsTensorList")) {
    // The sections are known only at run time.
    out[normalize_axis(ctx, ctx.int_attr("axis"), out.size(), "axis")] = -1;
    for (std::size_t i = 0; i < outs; ++i) ctx.set_output("Out", i, out, x.dtype);
    return;
  }
  const meta::SplitMeta m = meta::split(ctx, meta_of(x), ctx.int_attr("axis"));
  for (std::size_t i = 0; i < outs; ++i) {
    out[m.axis] = m.sizes[i];
    ctx.set_output("Out", i, out, x.dtype);
  }
}

void infer_concat(InferContext& ctx) {
  std::vector<TensorMeta> xs;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) xs.push_back(ctx.input_meta("X", i));
  if (!xs.empty() && ctx.has_input("AxisTensor")) {
    ctx.set_output("Out", Shape(xs[0].shape.size(), -1), xs[0].dtype);
    return;
  }
  const meta::ConcatMeta m = meta::concat(ctx, xs, ctx.int_attr("axis"));
  ctx.set_output("Out", m.out_shape, xs[0].dtype);
}

void infer_coalesce(InferContext& ctx) {
  std::vector<TensorMeta> inputs;
  for (std::size_t i = 0; i < ctx.input_count("Input"); ++i)
    inputs.push_back(ctx.input_meta("Input", i));
  const meta::CoalesceMeta m = meta::coalesce_tensor(ctx, inputs, meta::kGpuChunkAlignment);
  ctx.pass_through("Input", "Output");
  ctx.set_output("FusedOutput", Shape{m.fused_numel}, m.dtype);
}

void infer_cast(InferContext& ctx) {
  const Var& x = ctx.input("X");
  ctx.set_output("Out", x.shape, meta::cast(ctx, meta_of(x)).out);
}

// assign's gradient is assigned back (Paddle's AssignGradMaker).
std::vector<Op> make_assign_grad(const GradMakerContext& ctx) {
  return {Op("assign", {{"X", ctx.output_grad("Out")}}, {{"Out", ctx.input_grad("X")}}, {})};
}

// cast's gradient is cast back: in_dtype and out_dtype swap.
std::vector<Op> make_cast_grad(const GradMakerContext& ctx) {
  Op grad("cast", {{"X", ctx.output_grad("Out")}}, {{"Out", ctx.input_grad("X")}}, {});
  if (const Attribute* in = ctx.attr("in_dtype")) grad.set_attr("out_dtype", *in);
  if (const Attribute* out = ctx.attr("out_dtype")) grad.set_attr("in_dtype", *out);
  return {grad};
}

// split's gradient is the concat of its pieces' gradients along its axis
// (Paddle's SplitGradMaker); a piece that does not reach the loss reads
// zeros (the backward pass's fill_zeros_like).
std::vector<Op> make_split_grad(const GradMakerContext& ctx) {
  std::vector<Slot> inputs = {{"X", ctx.output_grad("Out")}};
  if (ctx.has_input("AxisTensor")) inputs.push_back({"AxisTensor", ctx.input("AxisTensor")});
  Op grad("concat", std::move(inputs), {{"Out", ctx.input_grad("X")}}, {});
  if (const Attribute* axis = ctx.attr("axis")) grad.set_attr("axis", *axis);
  return {grad};
}

}  // namespace

void add_tensor_op_defs(OpRegistry& r) {
  add_def(r,
          {"fill_constant",
           {optional_one("ValueTensor"), optional_one("ShapeTensor"),
            optional_many("ShapeTensorList")},
           {one("Out")},
           initializer_attrs({attr("value", Attribute(0.0f)), attr("str_value", Attribute("")),
                              attr("force_cpu", Attribute(false)),
                              attr("place_type", Attribute(int32_t{-1}))})},
          infer_initializer, GradMaker::none());
  add_def(r,
          {"uniform_random",
           {optional_one("ShapeTensor"), optional_many("ShapeTensorList")},
           {one("Out")},
           initializer_attrs({attr("min", Attribute(-1.0f)), attr("max", Attribute(1.0f)),
                              attr("seed", Attribute(int32_t{0})),
                              attr("diag_num", Attribute(int32_t{0})),
                              attr("diag_step", Attribute(int32_t{0})),
                              attr("diag_val", Attribute(1.0f))})},
          infer_initializer, GradMaker::none());
  add_def(r,
          {"gaussian_random",
           {optional_one("ShapeTensor"), optional_many("ShapeTensorList")},
           {one("Out")},
           initializer_attrs({attr("mean", Attribute(0.0f)), attr("std", Attribute(1.0f)),
                              attr("seed", Attribute(int32_t{0})),
                              attr("use_mkldnn", Attribute(false))})},
          infer_initializer, GradMaker::none());
  // feed/fetch move data between the program and its caller: the fed var
  // keeps the shape its declaration gives, the fetch list has none.
  add_def(r, {"feed", {one("X")}, {one("Out")}, {required("col", AttrType::INT)}}, {},
          GradMaker::none());
  add_def(r, {"fetch", {one("X")}, {one("Out")}, {required("col", AttrType::INT)}}, {},
          GradMaker::none());
  add_def(r, {"assign", {optional_one("X")}, {one("Out")}, {}},
          [](InferContext& ctx) { ctx.pass_through("X", "Out"); }, GradMaker::ops(make_assign_grad));
  add_def(r,
          {"cast",
           {one("X")},
           {one("Out")},
           {required("in_dtype", AttrType::INT), required("out_dtype", AttrType::INT),
            attr("use_mkldnn", Attribute(false))}},
          infer_cast, GradMaker::ops(make_cast_grad));
  add_def(r,
          {"split",
           {one("X"), optional_one("AxisTensor"), optional_many("SectionsTensorList")},
           {many("Out")},
           {attr("axis", Attribute(int32_t{0})), attr("num", Attribute(int32_t{0})),
            attr("sections", ints({}))}},
          infer_split, GradMaker::ops(make_split_grad));
  add_def(r,
          {"concat",
           {many("X"), optional_one("AxisTensor")},
           {one("Out")},
           {attr("axis", Attribute(int32_t{0})), attr("use_mkldnn", Attribute(false)),
            attr("use_quantizer", Attribute(false)),
            attr("mkldnn_data_type", Attribute("float32"))}},
          infer_concat);
  // Zeros of X's shape and dtype: the gradient of a var that does not reach
  // the loss where a grad op reads it (append_backward writes it).
  add_def(r, {"fill_zeros_like", {shape_only(one("X"))}, {one("Out")}, {}},
          [](InferContext& ctx) { ctx.pass_through("X", "Out"); }, GradMaker::none());
  add_def(r,
          {"coalesce_tensor",
           {many("Input")},
           {many("Output"), one("FusedOutput")},
           {required("dtype", AttrType::INT), attr("copy_data", Attribute(false)),
            attr("set_constant", Attribute(false)), attr("persist_output", Attribute(false)),
            attr("constant", Attribute(0.0f)), attr("check_name", Attribute(false)),
            attr("use_align", Attribute(true)), attr("align_size", Attribute(int32_t{-1})),
            attr("user_defined_size_of_dtype", Attribute(int32_t{-1})),
            attr("concated_shapes", longs({}), {AttrType::INTS}),
            attr("concated_ranks", longs({}), {AttrType::INTS})}},
          infer_coalesce);
}

CTP_REGISTER_OP_DEFS(add_tensor_op_defs);

}  // namespace ctp::defs
