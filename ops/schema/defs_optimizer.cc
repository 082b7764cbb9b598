// Optimizer update ops: sgd, momentum, adam, adamw, lamb and rmsprop. Each writes its state
// back in place, so every output takes the shape of the input it updates.
#include <string>

#include "ops/schema/defs_common.h"
#include "ops/schema/meta_optimizer.h"

namespace ctp::defs {
namespace {

void require_like_param(const InferContext& ctx, std::string_view slot) {
  if (ctx.has_input(slot))
    meta::require_like_param(ctx, slot, ctx.input_meta("Param"), ctx.input_meta(slot));
}

void require_one_element(const InferContext& ctx, std::string_view slot) {
  if (ctx.has_input(slot)) meta::require_one_element(ctx, slot, ctx.input_meta(slot));
}

// Checks an update's inputs (Grad and `state` like Param, LearningRate and
// the beta `powers` of one element) and gives each output the shape and
// dtype of the input it updates.
void infer_update(InferContext& ctx, std::initializer_list<const char*> state,
                  std::initializer_list<const char*> powers = {}) {
  require_like_param(ctx, "Grad");
  for (const char* slot : state) require_like_param(ctx, slot);
  require_one_element(ctx, "LearningRate");
  for (const char* slot : powers) require_one_element(ctx, slot);
  ctx.pass_through("Param", "ParamOut");
  for (const char* slot : state) ctx.pass_through(slot, std::string(slot) + "Out");
  for (const char* slot : powers) ctx.pass_through(slot, std::string(slot) + "Out");
  ctx.pass_through("MasterParam", "MasterParamOut");
}

void infer_sgd(InferContext& ctx) { infer_update(ctx, {}); }

void infer_momentum(InferContext& ctx) {
  meta::momentum_attrs(ctx);
  infer_update(ctx, {"Velocity"});
}

// adam and lamb share their moments and beta powers.
void infer_adaptive(InferContext& ctx) {
  infer_update(ctx, {"Moment1", "Moment2"}, {"Beta1Pow", "Beta2Pow"});
}

void infer_rmsprop(InferContext& ctx) { infer_update(ctx, {"MeanSquare", "Moment", "MeanGrad"}); }

std::vector<SlotDef> adam_inputs() {
  return {one("Param"), one("Grad"), one("LearningRate"), one("Moment1"), one("Moment2"),
          one("Beta1Pow"), one("Beta2Pow"), optional_one("Beta1Tensor"),
          optional_one("Beta2Tensor"), optional_one("EpsilonTensor"),
          optional_one("MasterParam"), optional_one("SkipUpdate")};
}

// Beta1PowOut/Beta2PowOut appeared in Paddle 2.0 (earlier programs update
// the powers with scale ops), so they may be absent.
std::vector<SlotDef> adam_outputs() {
  return {one("ParamOut"), one("Moment1Out"), one("Moment2Out"), optional_one("Beta1PowOut"),
          optional_one("Beta2PowOut"), optional_one("MasterParamOut")};
}

std::vector<AttrDef> adam_attrs() {
  return {attr("beta1", Attribute(0.9f)), attr("beta2", Attribute(0.999f)),
          attr("epsilon", Attribute(1.0e-8f)), attr("lazy_mode", Attribute(false)),
          attr("min_row_size_to_use_multithread", Attribute(int64_t{1000}), {AttrType::INT}),
          attr("multi_precision", Attribute(false)),
          attr("use_global_beta_pow", Attribute(false))};
}

// Paddle's adamw op maker: adam's attributes, and the decoupled weight decay
// (coeff, applied only with with_decay) and lr_ratio.
std::vector<AttrDef> adamw_attrs() {
  std::vector<AttrDef> attrs = adam_attrs();
  attrs.push_back(attr("lr_ratio", Attribute(1.0f)));
  attrs.push_back(attr("coeff", Attribute(0.01f)));
  attrs.push_back(attr("with_decay", Attribute(false)));
  return attrs;
}

}  // namespace

void add_optimizer_op_defs(OpRegistry& r) {
  add_def(r,
          {"sgd",
           {one("Param"), one("LearningRate"), one("Grad"), optional_one("MasterParam")},
           {one("ParamOut"), optional_one("MasterParamOut")},
           {attr("multi_precision", Attribute(false))}},
          infer_sgd);
  add_def(r,
          {"momentum",
           {one("Param"), one("Grad"), one("Velocity"), one("LearningRate"),
            optional_one("MasterParam")},
           {one("ParamOut"), one("VelocityOut"), optional_one("MasterParamOut")},
           {required("mu", AttrType::FLOAT), attr("use_nesterov", Attribute(false)),
            attr("regularization_method", Attribute("")),
            attr("regularization_coeff", Attribute(0.0f)),
            attr("multi_precision", Attribute(false)), attr("rescale_grad", Attribute(1.0f))}},
          infer_momentum);
  add_def(r, {"adam", adam_inputs(), adam_outputs(), adam_attrs()}, infer_adaptive);
  add_def(r, {"adamw", adam_inputs(), adam_outputs(), adamw_attrs()}, infer_adaptive);
  add_def(r,
          {"lamb",
           {one("Param"), one("Grad"), one("LearningRate"), one("Moment1"), one("Moment2"),
            one("Beta1Pow"), one("Beta2Pow"), optional_one("MasterParam"),
            optional_one("SkipUpdate")},
           {one("ParamOut"), one("Moment1Out"), one("Moment2Out"), optional_one("Beta1PowOut"),
            optional_one("Beta2PowOut"), optional_one("MasterParamOut")},
           {required("weight_decay", AttrType::FLOAT), attr("beta1", Attribute(0.9f)),
            attr("beta2", Attribute(0.999f)), attr("epsilon", Attribute(1.0e-6f)),
            attr("always_adapt", Attribute(false)), attr("multi_precision", Attribute(false))}},
          infer_adaptive);
  // Paddle's rmsprop op maker; MeanGrad is read and written only when centered.
  add_def(r,
          {"rmsprop",
           {one("Param"), one("MeanSquare"), optional_one("MeanGrad"), one("LearningRate"),
            one("Grad"), one("Moment"), optional_one("MasterParam")},
           {one("ParamOut"), one("MomentOut"), one("MeanSquareOut"), optional_one("MeanGradOut"),
            optional_one("MasterParamOut")},
           {attr("epsilon", Attribute(1.0e-10f)), attr("decay", Attribute(0.9f)),
            attr("momentum", Attribute(0.0f)), attr("centered", Attribute(false)),
            attr("multi_precision", Attribute(false))}},
          infer_rmsprop);
}

CTP_REGISTER_OP_DEFS(add_optimizer_op_defs);

}  // namespace ctp::defs
