// Optimizer update ops: sgd, momentum, adam and lamb. Each writes its state
// back in place, so every output takes the shape of the input it updates.
#include "ops/schema/defs_common.h"

namespace ctp::defs {
namespace {

void require_like_param(const InferContext& ctx, std::string_view slot) {
  if (!ctx.has_input(slot)) return;
  const Var& param = ctx.input("Param");
  const Var& v = ctx.input(slot);
  if (!compatible(param.shape, v.shape))
    ctx.fail(ctx.describe_input(slot) + " has shape " + shape_to_string(v.shape) + ", but " +
             ctx.describe_input("Param") + " has " + shape_to_string(param.shape));
}

void require_one_element(const InferContext& ctx, std::string_view slot) {
  if (!ctx.has_input(slot)) return;
  const int64_t numel = ctx.input(slot).numel();
  if (numel >= 0 && numel != 1)
    ctx.fail(ctx.describe_input(slot) + " must hold one element, has " + std::to_string(numel));
}

void infer_sgd(InferContext& ctx) {
  require_like_param(ctx, "Grad");
  require_one_element(ctx, "LearningRate");
  ctx.pass_through("Param", "ParamOut");
  ctx.pass_through("MasterParam", "MasterParamOut");
}

void infer_momentum(InferContext& ctx) {
  require_like_param(ctx, "Grad");
  require_like_param(ctx, "Velocity");
  require_one_element(ctx, "LearningRate");
  ctx.pass_through("Param", "ParamOut");
  ctx.pass_through("Velocity", "VelocityOut");
  ctx.pass_through("MasterParam", "MasterParamOut");
}

// adam and lamb share their moments and beta powers.
void infer_adaptive(InferContext& ctx) {
  require_like_param(ctx, "Grad");
  require_like_param(ctx, "Moment1");
  require_like_param(ctx, "Moment2");
  require_one_element(ctx, "LearningRate");
  require_one_element(ctx, "Beta1Pow");
  require_one_element(ctx, "Beta2Pow");
  ctx.pass_through("Param", "ParamOut");
  ctx.pass_through("Moment1", "Moment1Out");
  ctx.pass_through("Moment2", "Moment2Out");
  ctx.pass_through("Beta1Pow", "Beta1PowOut");
  ctx.pass_through("Beta2Pow", "Beta2PowOut");
  ctx.pass_through("MasterParam", "MasterParamOut");
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
  // Beta1PowOut/Beta2PowOut appeared in Paddle 2.0 (earlier programs update
  // the powers with scale ops), so they may be absent.
  add_def(r,
          {"adam",
           {one("Param"), one("Grad"), one("LearningRate"), one("Moment1"), one("Moment2"),
            one("Beta1Pow"), one("Beta2Pow"), optional_one("Beta1Tensor"),
            optional_one("Beta2Tensor"), optional_one("EpsilonTensor"),
            optional_one("MasterParam"), optional_one("SkipUpdate")},
           {one("ParamOut"), one("Moment1Out"), one("Moment2Out"), optional_one("Beta1PowOut"),
            optional_one("Beta2PowOut"), optional_one("MasterParamOut")},
           {attr("beta1", Attribute(0.9f)), attr("beta2", Attribute(0.999f)),
            attr("epsilon", Attribute(1.0e-8f)), attr("lazy_mode", Attribute(false)),
            attr("min_row_size_to_use_multithread", Attribute(int64_t{1000}), {AttrType::INT}),
            attr("multi_precision", Attribute(false)),
            attr("use_global_beta_pow", Attribute(false))}},
          infer_adaptive);
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
}

CTP_REGISTER_OP_DEFS(add_optimizer_op_defs);

}  // namespace ctp::defs
