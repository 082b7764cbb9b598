// Neural-network layers: relu and softmax_with_cross_entropy, with grads.
#include "ops/schema/defs_common.h"

namespace ctp::defs {
namespace {

// Softmax has the logits' shape; Loss has it too with the class axis cut to 1.
// Hard labels hold one class index per row (the axis dim is 1), soft labels
// one probability per class (the logits' shape).
void infer_softmax_with_cross_entropy(InferContext& ctx) {
  const Var& logits = ctx.input("Logits");
  const Var& label = ctx.input("Label");
  const std::size_t rank = logits.shape.size();
  if (rank == 0) ctx.fail(ctx.describe_input("Logits") + " must have rank >= 1");
  const std::size_t axis = normalize_axis(ctx, ctx.int_attr("axis"), rank, "axis");
  Shape expected_label = logits.shape;
  if (!ctx.bool_attr("soft_label")) expected_label[axis] = 1;
  if (!compatible(label.shape, expected_label))
    ctx.fail(ctx.describe_input("Label") + " has shape " + shape_to_string(label.shape) +
             ", expected " + shape_to_string(expected_label) + " for " +
             ctx.describe_input("Logits") + " " + shape_to_string(logits.shape) +
             (ctx.bool_attr("soft_label") ? " (soft labels)" : " (hard labels)"));
  Shape loss = logits.shape;
  loss[axis] = 1;
  ctx.set_output("Softmax", logits.shape, logits.dtype);
  ctx.set_output("Loss", loss, logits.dtype);
}

std::vector<AttrDef> softmax_with_cross_entropy_attrs() {
  return {attr("soft_label", Attribute(false)),
          attr("use_softmax", Attribute(true)),
          attr("numeric_stable_mode", Attribute(true)),
          attr("ignore_index", Attribute(int32_t{-100})),
          attr("axis", Attribute(int32_t{-1}))};
}

std::vector<AttrDef> relu_attrs() {
  return {attr("use_mkldnn", Attribute(false)), attr("use_cudnn", Attribute(false))};
}

}  // namespace

void add_nn_op_defs(OpRegistry& r) {
  add_def(r, {"relu", {one("X")}, {one("Out")}, relu_attrs()},
          [](InferContext& ctx) { ctx.pass_through("X", "Out"); });
  // relu's grad reads the forward output, not its input.
  add_def(r, {"relu_grad", {one("Out"), one("Out@GRAD")}, {optional_one("X@GRAD")}, relu_attrs()},
          [](InferContext& ctx) { ctx.pass_through("Out", "X@GRAD"); });
  add_def(r,
          {"softmax_with_cross_entropy",
           {one("Logits"), one("Label")},
           {one("Softmax"), one("Loss")},
           softmax_with_cross_entropy_attrs()},
          infer_softmax_with_cross_entropy);
  add_def(r,
          {"softmax_with_cross_entropy_grad",
           {one("Label"), one("Softmax"), one("Loss@GRAD")},
           {optional_one("Logits@GRAD")},
           softmax_with_cross_entropy_attrs()},
          [](InferContext& ctx) { ctx.pass_through("Softmax", "Logits@GRAD"); });
}

CTP_REGISTER_OP_DEFS(add_nn_op_defs);

}  // namespace ctp::defs
