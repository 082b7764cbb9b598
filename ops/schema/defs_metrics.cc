// Metrics: top_k (v1) and top_k_v2 with their grads, accuracy (no gradient,
// as in Paddle). The rules are ops/schema/meta_metrics.h.
#include "ops/schema/defs_common.h"
#include "ops/schema/meta_metrics.h"

namespace ctp::defs {
namespace {

void infer_top_k(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  const meta::TopKMeta m = meta::top_k(ctx, x, std::nullopt);
  ctx.set_output("Out", m.out_shape, x.dtype);
  ctx.set_output("Indices", m.out_shape, DataType::INT64);
}

void infer_top_k_grad(InferContext& ctx) {
  meta::top_k_grad(ctx, ctx.input_meta("X"), ctx.input_meta("Indices"),
                   ctx.input_meta("Out@GRAD"));
  ctx.pass_through("X", "X@GRAD");
}

void infer_accuracy(InferContext& ctx) {
  meta::accuracy(ctx, ctx.input_meta("Out"), ctx.input_meta("Indices"), ctx.input_meta("Label"));
  ctx.set_output("Accuracy", {1}, DataType::FP32);
  ctx.set_output("Correct", {1}, DataType::INT32);
  ctx.set_output("Total", {1}, DataType::INT32);
}

std::vector<AttrDef> top_k_attrs() { return {attr("k", Attribute(int32_t{1}))}; }

// sorted=false lets Paddle return the k in any order; ctp always sorts.
std::vector<AttrDef> top_k_v2_attrs() {
  return {attr("k", Attribute(int32_t{1})), attr("axis", Attribute(int32_t{-1})),
          attr("largest", Attribute(true)), attr("sorted", Attribute(true))};
}

// K, when given, is a one-element tensor that overrides attribute k.
void add_top_k(OpRegistry& r, const std::string& type, std::vector<AttrDef> attrs) {
  add_def(r, {type, {one("X"), optional_one("K")}, {one("Out"), one("Indices")}, attrs},
          infer_top_k, grad_op(type + "_grad", {"X", "Indices", "Out@GRAD"}, {"X@GRAD"}));
  add_def(r,
          {type + "_grad",
           {one("X"), one("Indices"), one("Out@GRAD")},
           {optional_one("X@GRAD")},
           std::move(attrs)},
          infer_top_k_grad);
}

}  // namespace

void add_metrics_op_defs(OpRegistry& r) {
  add_top_k(r, "top_k", top_k_attrs());
  add_top_k(r, "top_k_v2", top_k_v2_attrs());
  add_def(r,
          {"accuracy",
           {one("Out"), one("Indices"), one("Label")},
           {one("Accuracy"), one("Correct"), one("Total")},
           {}},
          infer_accuracy, GradMaker::none());
}

CTP_REGISTER_OP_DEFS(add_metrics_op_defs);

}  // namespace ctp::defs
