// The activation ops (tanh, sigmoid, sqrt, square, gelu; relu6, hard_sigmoid,
// hard_swish and swish with their attributes), clip and dropout,
// with the grad ops Paddle's backward writes for them: slots and attributes
// as Paddle's op makers declare them, inference from meta_activation.h.
#include "ops/schema/defs_common.h"
#include "ops/schema/meta_activation.h"

namespace ctp::defs {
namespace {

// Older writers put is_test on activations as an INT.
AttrDef is_test_attr() { return attr("is_test", Attribute(false), {AttrType::INT}); }

std::vector<AttrDef> activation_attrs() {
  return {attr("use_mkldnn", Attribute(false)), attr("use_cudnn", Attribute(false)),
          is_test_attr()};
}

std::vector<AttrDef> gelu_attrs() {
  std::vector<AttrDef> attrs = activation_attrs();
  attrs.push_back(attr("approximate", Attribute(false)));
  attrs.push_back(attr("mkldnn_data_type", Attribute(std::string("float32"))));
  return attrs;
}

// Paddle's clip maker declares min and max without defaults.
std::vector<AttrDef> clip_attrs() {
  return {required("min", AttrType::FLOAT, {AttrType::FLOAT64}),
          required("max", AttrType::FLOAT, {AttrType::FLOAT64}),
          attr("use_mkldnn", Attribute(false)),
          attr("mkldnn_data_type", Attribute(std::string("float32")))};
}

std::vector<AttrDef> dropout_attrs() {
  return {attr("dropout_prob", Attribute(0.5f)), is_test_attr(), attr("fix_seed", Attribute(false)),
          attr("seed", Attribute(int32_t{0})),
          attr("dropout_implementation", Attribute(std::string("downgrade_in_infer")))};
}

// The activations with attributes (ops/common/attr_activation_math.h), with
// Paddle's defaults.
std::vector<AttrDef> with_floats(std::vector<std::pair<const char*, float>> own) {
  std::vector<AttrDef> attrs = activation_attrs();
  for (const auto& [name, value] : own) attrs.push_back(attr(name, Attribute(value)));
  return attrs;
}

void infer_activation(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  ctx.set_output("Out", meta::activation(ctx, x), x.dtype);
}

// The grad op reads `in_slot` (Out or X) and Out@GRAD.
template <const char* kInSlot>
void infer_activation_grad(InferContext& ctx) {
  const TensorMeta dout = ctx.input_meta("Out@GRAD");
  ctx.set_output("X@GRAD", meta::activation_grad(ctx, kInSlot, ctx.input_meta(kInSlot), dout),
                 dout.dtype);
}
constexpr char kOut[] = "Out";
constexpr char kX[] = "X";

void infer_clip(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  const auto min = optional_meta(ctx, "Min"), max = optional_meta(ctx, "Max");
  ctx.set_output("Out", meta::clip(ctx, x, pointer(min), pointer(max)), x.dtype);
}

void infer_clip_grad(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  const auto min = optional_meta(ctx, "Min"), max = optional_meta(ctx, "Max");
  ctx.set_output("X@GRAD",
                 meta::clip_grad(ctx, x, pointer(min), pointer(max), ctx.input_meta("Out@GRAD")),
                 x.dtype);
}

void infer_dropout(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  const auto seed = optional_meta(ctx, "Seed");
  const meta::DropoutMeta m = meta::dropout(ctx, x, pointer(seed));
  ctx.set_output("Out", m.shape, x.dtype);
  ctx.set_output("Mask", m.shape, DataType::UINT8);
}

void infer_dropout_grad(InferContext& ctx) {
  const TensorMeta dout = ctx.input_meta("Out@GRAD");
  const meta::DropoutMeta m = meta::dropout_grad(ctx, ctx.input_meta("Mask"), dout);
  ctx.set_output("X@GRAD", m.shape, dout.dtype);
}

// X in, Out out; the grad reads `grad_input` and Out@GRAD, writes X@GRAD.
template <const char* kGradInput>
void add_activation(OpRegistry& r, const std::string& type, std::vector<AttrDef> attrs) {
  add_def(r, {type, {one("X")}, {one("Out")}, attrs}, infer_activation,
          grad_op(type + "_grad", {kGradInput, "Out@GRAD"}, {"X@GRAD"}));
  add_def(r,
          {type + "_grad",
           {one(kGradInput), one("Out@GRAD")},
           {optional_one("X@GRAD")},
           std::move(attrs)},
          infer_activation_grad<kGradInput>);
}

}  // namespace

void add_activation_op_defs(OpRegistry& r) {
  // tanh, sigmoid and sqrt differentiate through their output, square and
  // gelu through X (ops/common/activation_math.h: grad_reads_out).
  for (const char* type : {"tanh", "sigmoid", "sqrt"})
    add_activation<kOut>(r, type, activation_attrs());
  add_activation<kX>(r, "square", activation_attrs());
  add_activation<kX>(r, "gelu", gelu_attrs());
  // relu6 and hard_sigmoid differentiate through Out, hard_swish and swish
  // through X (attr_activation_math.h: grad_reads_out).
  add_activation<kOut>(r, "relu6", with_floats({{"threshold", 6.0f}}));
  add_activation<kOut>(r, "hard_sigmoid", with_floats({{"slope", 0.2f}, {"offset", 0.5f}}));
  add_activation<kX>(r, "hard_swish",
                     with_floats({{"threshold", 6.0f}, {"scale", 6.0f}, {"offset", 3.0f}}));
  add_activation<kX>(r, "swish", with_floats({{"beta", 1.0f}}));
  add_def(
      r, {"clip", {one("X"), optional_one("Min"), optional_one("Max")}, {one("Out")}, clip_attrs()},
      infer_clip, grad_op("clip_grad", {"X", "Min", "Max", "Out@GRAD"}, {"X@GRAD"}));
  add_def(r,
          {"clip_grad",
           {one("X"), optional_one("Min"), optional_one("Max"), one("Out@GRAD")},
           {optional_one("X@GRAD")},
           clip_attrs()},
          infer_clip_grad);
  // Mask is an intermediate output Paddle leaves out of some programs.
  add_def(r,
          {"dropout",
           {one("X"), optional_one("Seed")},
           {one("Out"), optional_one("Mask")},
           dropout_attrs()},
          infer_dropout, grad_op("dropout_grad", {"Mask", "Out@GRAD"}, {"X@GRAD"}));
  add_def(
      r,
      {"dropout_grad", {one("Mask"), one("Out@GRAD")}, {optional_one("X@GRAD")}, dropout_attrs()},
      infer_dropout_grad);
}

CTP_REGISTER_OP_DEFS(add_activation_op_defs);

}  // namespace ctp::defs
