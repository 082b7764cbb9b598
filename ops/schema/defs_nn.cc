// Neural-network layers: relu, softmax, softmax_with_cross_entropy and
// cross_entropy2, with grads.
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

void infer_softmax(InferContext& ctx) {
  meta::softmax(ctx, ctx.input_meta("X"));
  ctx.pass_through("X", "Out");
}

void infer_softmax_grad(InferContext& ctx) {
  meta::softmax_grad(ctx, ctx.input_meta("Out"), ctx.input_meta("Out@GRAD"));
  ctx.pass_through("Out", "X@GRAD");
}

void infer_cross_entropy2(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  const meta::CrossEntropy2Meta m = meta::cross_entropy2(ctx, x, ctx.input_meta("Label"));
  ctx.set_output("Y", m.y_shape, x.dtype);
  ctx.set_output("MatchX", m.match_x_shape, x.dtype);
  ctx.set_output("XShape", m.xshape_shape, x.dtype);
}

void infer_cross_entropy_grad2(InferContext& ctx) {
  const TensorMeta dy = ctx.input_meta("Y@GRAD");
  const meta::CrossEntropy2Meta m =
      meta::cross_entropy_grad2(ctx, ctx.input_meta("XShape"), ctx.input_meta("Label"),
                                ctx.input_meta("MatchX"), dy);
  ctx.set_output("X@GRAD", m.x_shape, dy.dtype);
}

// Paddle's softmax op maker (the oneDNN and cuDNN switches change nothing here).
std::vector<AttrDef> softmax_attrs() {
  return {attr("axis", Attribute(int32_t{-1})),
          attr("use_cudnn", Attribute(false)),
          attr("data_format", Attribute(std::string("AnyLayout"))),
          attr("use_mkldnn", Attribute(false)),
          attr("mkldnn_data_type", Attribute(std::string("float32"))),
          // Older writers (Paddle 1.x) put is_test on softmax as an INT.
          attr("is_test", Attribute(false), {AttrType::INT})};
}

// cross_entropy2 takes hard labels only (Paddle's maker has no soft_label).
std::vector<AttrDef> cross_entropy2_attrs() {
  return {attr("ignore_index", Attribute(int32_t{-100}))};
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
          [](InferContext& ctx) { ctx.pass_through("X", "Out"); },
          grad_op("relu_grad", {"Out", "Out@GRAD"}, {"X@GRAD"}));
  // relu's grad reads the forward output, not its input.
  add_def(r, {"relu_grad", {one("Out"), one("Out@GRAD")}, {optional_one("X@GRAD")}, relu_attrs()},
          infer_relu_grad);
  add_def(r,
          {"softmax_with_cross_entropy",
           {one("Logits"), one("Label")},
           {one("Softmax"), one("Loss")},
           softmax_with_cross_entropy_attrs()},
          infer_softmax_with_cross_entropy,
          grad_op("softmax_with_cross_entropy_grad", {"Label", "Softmax", "Loss@GRAD"},
                  {"Logits@GRAD"}));
  add_def(r,
          {"softmax_with_cross_entropy_grad",
           {one("Label"), one("Softmax"), one("Loss@GRAD")},
           {optional_one("Logits@GRAD")},
           softmax_with_cross_entropy_attrs()},
          infer_softmax_with_cross_entropy_grad);
  add_def(r, {"softmax", {one("X")}, {one("Out")}, softmax_attrs()}, infer_softmax,
          grad_op("softmax_grad", {"Out", "Out@GRAD"}, {"X@GRAD"}));
  // softmax's grad reads the forward output, as relu's does.
  add_def(r,
          {"softmax_grad",
           {one("Out"), one("Out@GRAD")},
           {optional_one("X@GRAD")},
           softmax_attrs()},
          infer_softmax_grad);
  add_def(r,
          {"cross_entropy2",
           {one("X"), one("Label")},
           {one("Y"), one("XShape"), one("MatchX")},
           cross_entropy2_attrs()},
          infer_cross_entropy2,
          grad_op("cross_entropy_grad2", {"Label", "MatchX", "XShape", "Y@GRAD"}, {"X@GRAD"}));
  add_def(r,
          {"cross_entropy_grad2",
           {one("Label"), one("MatchX"), one("XShape"), one("Y@GRAD")},
           {optional_one("X@GRAD")},
           cross_entropy2_attrs()},
          infer_cross_entropy_grad2);
}

CTP_REGISTER_OP_DEFS(add_nn_op_defs);

}  // namespace ctp::defs
