// Neural-network layers: relu and softmax_with_cross_entropy, with grads.
#include "ops/schema/defs_common.h"
#include "ops/schema/meta_nn.h"

namespace ctp::defs {
namespace {

void infer_softmax_with_cross_entropy(InferContext& ctx) {
  const TensorMeta logits = ctx.input_meta("Logits");
  const meta::SoftmaxCrossEntropyMeta m =
      meta::softmax_with_cross_entropy(ctx, logits, ctx.input_meta("Label"));
  ctx.set_output("Softmax", logits.shape, logits.dtype);
  ctx.set_output("Loss", m.loss_shape, logits.dtype);
}

void infer_softmax_with_cross_entropy_grad(InferContext& ctx) {
  meta::softmax_with_cross_entropy_grad(ctx, ctx.input_meta("Softmax"), ctx.input_meta("Label"),
                                        ctx.input_meta("Loss@GRAD"));
  ctx.pass_through("Softmax", "Logits@GRAD");
}

void infer_relu_grad(InferContext& ctx) {
  meta::relu_grad(ctx, ctx.input_meta("Out"), ctx.input_meta("Out@GRAD"));
  ctx.pass_through("Out", "X@GRAD");
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
          infer_relu_grad);
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
          infer_softmax_with_cross_entropy_grad);
}

CTP_REGISTER_OP_DEFS(add_nn_op_defs);

}  // namespace ctp::defs
