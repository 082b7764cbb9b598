// Simulated ("fake") quantization, as Paddle's post-training and
// quantization-aware tools leave it in inference programs (the Paddle-Lite
// ResNet-50 int8 model of ../shared/realworld is one):
// fake_quantize_moving_average_abs_max, its quantize-dequantize twin and
// fake_dequantize_max_abs, plus the quantize-dequantize op's gradient
// (Paddle's straight-through estimator). The rules are ops/schema/meta_quant.h.
#include "ops/schema/defs_common.h"
#include "ops/schema/meta_quant.h"

namespace ctp::defs {
namespace {

void infer_fake_quantize(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  const meta::FakeQuantMeta m = meta::fake_quantize(ctx, x, ctx.input_meta("InScale"));
  ctx.set_output("Out", m.shape, x.dtype);
  ctx.set_output("OutScale", {1}, x.dtype);
}

void infer_fake_dequantize(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  const meta::FakeDequantMeta m = meta::fake_dequantize(ctx, x, ctx.input_meta("Scale"));
  ctx.set_output("Out", m.shape, x.dtype);
}

void infer_straight_through_grad(InferContext& ctx) {
  const TensorMeta dout = ctx.input_meta("Out@GRAD");
  ctx.set_output("X@GRAD", meta::straight_through_grad(ctx, dout), dout.dtype);
}

// Paddle's FakeQuantOrWithDequantMovingAverageAbsMaxOpMaker.
std::vector<AttrDef> moving_average_attrs() {
  return {attr("moving_rate", Attribute(0.9f)), attr("bit_length", Attribute(int32_t{8})),
          attr("round_type", Attribute(int32_t{0})), attr("is_test", Attribute(false))};
}

OpDef moving_average_def(const std::string& type) {
  return {type,
          {one("X"), one("InScale"), optional_one("InAccum"), optional_one("InState")},
          {one("Out"), one("OutScale"), optional_one("OutState"), optional_one("OutAccum")},
          moving_average_attrs()};
}

void add_quant_op_defs(OpRegistry& r) {
  // Paddle gives the quantizer no gradient (EmptyGradOpMaker): it feeds an
  // integer-valued tensor to a dequantizer, never a trained path.
  add_def(r, moving_average_def("fake_quantize_moving_average_abs_max"), infer_fake_quantize,
          GradMaker::none());
  add_def(r, moving_average_def("fake_quantize_dequantize_moving_average_abs_max"),
          infer_fake_quantize,
          grad_op("straight_through_estimator_grad", {"Out@GRAD"}, {"X@GRAD"}));
  add_def(r,
          {"fake_dequantize_max_abs",
           {one("X"), one("Scale")},
           {one("Out")},
           {required("max_range", AttrType::FLOAT)}},
          infer_fake_dequantize, GradMaker::none());
  add_def(r,
          {"straight_through_estimator_grad",
           {one("Out@GRAD")},
           {optional_one("X@GRAD")},
           moving_average_attrs()},
          infer_straight_through_grad);
}

}  // namespace

CTP_REGISTER_OP_DEFS(add_quant_op_defs);

}  // namespace ctp::defs
