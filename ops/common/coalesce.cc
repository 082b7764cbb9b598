#include "ops/common/coalesce.h"

namespace ctp {
namespace {

// The meta of input i: its tensor's, else its declared var's.
TensorMeta input_meta(KernelContext& ctx, std::size_t i, bool need_data) {
  const std::string& name = ctx.input_names("Input")[i];
  const Tensor* t = ctx.scope().find(name);
  if (t && t->initialized()) return meta_of(*t);
  if (need_data) ctx.input("Input", i);  // throws the "used before initialized" error
  const Var* v = ctx.block().find_var(name);
  if (!v || v->numel() < 0)
    ctx.fail("Input '" + name + "' has no tensor yet and no fully known declared shape");
  return meta_of(*v);
}

}  // namespace

CoalescePlan plan_coalesce(KernelContext& ctx, std::size_t default_alignment) {
  CoalescePlan plan;
  plan.copy_data = ctx.bool_attr("copy_data");
  plan.set_constant = ctx.bool_attr("set_constant");
  plan.constant = ctx.float_attr("constant");
  std::vector<TensorMeta> inputs;
  for (std::size_t i = 0; i < ctx.input_count("Input"); ++i)
    inputs.push_back(input_meta(ctx, i, plan.copy_data));
  plan.layout = meta::coalesce_tensor(ctx, inputs, default_alignment);
  for (const TensorMeta& in : inputs) plan.shapes.push_back(in.shape);
  plan.fused_shape = {plan.layout.fused_numel};
  return plan;
}

bool layout_is_current(KernelContext& ctx, const CoalescePlan& plan, const Device& device) {
  const Tensor& fused = ctx.output("FusedOutput");
  if (!fused.initialized() || fused.device() != device || fused.dtype() != plan.layout.dtype ||
      fused.shape() != plan.fused_shape)
    return false;
  const auto& out_names = ctx.output_names("Output");
  for (std::size_t i = 0; i < plan.shapes.size(); ++i) {
    const Tensor* out = ctx.scope().find(out_names[i]);
    if (!out || !out->shares_buffer_with(fused) ||
        out->offset() != fused.offset() + plan.layout.offset_bytes[i] ||
        out->dtype() != plan.layout.dtype || out->shape() != plan.shapes[i])
      return false;
  }
  return true;
}

}  // namespace ctp
