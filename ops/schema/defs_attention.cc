// Fused attention: flash_attn and flash_attn_grad, with the slots and
// attributes a Paddle static program writes for them
// (paddle.nn.functional.flash_attention: LayerHelper('flash_attn'); phi's
// ops.yaml and backward.yaml); rules in meta_attention.h.
#include "ops/schema/defs_common.h"
#include "ops/schema/meta_attention.h"

namespace ctp::defs {
namespace {

void infer_flash_attn(InferContext& ctx) {
  const TensorMeta q = ctx.input_meta("q");
  const auto fixed_seed_offset = optional_meta(ctx, "fixed_seed_offset");
  const auto attn_mask = optional_meta(ctx, "attn_mask");
  const meta::FlashAttnMeta m = meta::flash_attn(ctx, q, ctx.input_meta("k"), ctx.input_meta("v"),
                                                 pointer(fixed_seed_offset), pointer(attn_mask));
  ctx.set_output("out", m.out_shape, q.dtype);
  ctx.set_output("softmax", m.softmax_shape, q.dtype);
  ctx.set_output("softmax_lse", m.softmax_lse_shape, DataType::FP32);
  ctx.set_output("seed_offset", m.seed_offset_shape, DataType::INT64);
}

void infer_flash_attn_grad(InferContext& ctx) {
  const auto attn_mask = optional_meta(ctx, "attn_mask");
  meta::flash_attn_grad(ctx, ctx.input_meta("q"), ctx.input_meta("k"), ctx.input_meta("v"),
                        ctx.input_meta("out"), ctx.input_meta("softmax_lse"), pointer(attn_mask),
                        ctx.input_meta("out@GRAD"));
  ctx.pass_through("q", "q@GRAD");
  ctx.pass_through("k", "k@GRAD");
  ctx.pass_through("v", "v@GRAD");
}

// flash_attn's attributes (ops.yaml). The grad op takes the same: the
// common grad maker copies them all, and backward.yaml's two (dropout,
// causal) are among them.
std::vector<AttrDef> flash_attn_attrs() {
  return {attr("dropout", Attribute(0.0f)), attr("causal", Attribute(false)),
          attr("return_softmax", Attribute(false)), attr("is_test", Attribute(false)),
          attr("rng_name", Attribute(std::string()))};
}

}  // namespace

void add_attention_op_defs(OpRegistry& r) {
  add_def(r,
          {"flash_attn",
           {one("q"), one("k"), one("v"), optional_one("fixed_seed_offset"),
            optional_one("attn_mask")},
           {one("out"), one("softmax"), one("softmax_lse"), one("seed_offset")},
           flash_attn_attrs()},
          infer_flash_attn,
          grad_op("flash_attn_grad",
                  {"q", "k", "v", "out", "softmax_lse", "seed_offset", "attn_mask", "out@GRAD"},
                  {"q@GRAD", "k@GRAD", "v@GRAD"}));
  add_def(r,
          {"flash_attn_grad",
           {one("q"), one("k"), one("v"), one("out"), one("softmax_lse"),
            optional_one("seed_offset"), optional_one("attn_mask"), one("out@GRAD")},
           {optional_one("q@GRAD"), optional_one("k@GRAD"), optional_one("v@GRAD")},
           flash_attn_attrs()},
          infer_flash_attn_grad);
}

CTP_REGISTER_OP_DEFS(add_attention_op_defs);

}  // namespace ctp::defs
