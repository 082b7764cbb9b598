// NLP layers: layer_norm and lookup_table_v2 (embedding), with the grad ops
// Paddle's backward pass writes for them. Slots and attributes follow
// Paddle's op makers.
#include "ops/schema/defs_common.h"
#include "ops/schema/meta_embedding.h"
#include "ops/schema/meta_norm.h"

namespace ctp::defs {
namespace {

void infer_layer_norm(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  const DataType dtype = x.dtype;
  const Shape shape = x.shape;
  const meta::LayerNormMeta m =
      meta::layer_norm(ctx, x, optional_meta(ctx, "Scale"), optional_meta(ctx, "Bias"));
  ctx.set_output("Mean", m.stat_shape, m.stat_dtype);
  ctx.set_output("Variance", m.stat_shape, m.stat_dtype);
  ctx.set_output("Y", shape, dtype);
}

void infer_layer_norm_grad(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  meta::layer_norm_grad(ctx, x, optional_meta(ctx, "Scale"), optional_meta(ctx, "Bias"),
                        ctx.input_meta("Mean"), ctx.input_meta("Variance"),
                        ctx.input_meta("Y@GRAD"));
  for (const char* slot : {"X", "Scale", "Bias"}) {
    const std::string grad = std::string(slot) + "@GRAD";
    if (!ctx.has_output(grad)) continue;
    if (!ctx.has_input(slot)) ctx.fail("output " + grad + " needs input " + slot);
    const Var& v = ctx.input(slot);
    const Shape shape = v.shape;
    ctx.set_output(grad, shape, v.dtype);
  }
}

void infer_lookup_table_v2(InferContext& ctx) {
  const TensorMeta w = ctx.input_meta("W");
  ctx.set_output("Out", meta::lookup_table_v2(ctx, w, ctx.input_meta("Ids")).out_shape, w.dtype);
}

void infer_lookup_table_v2_grad(InferContext& ctx) {
  const TensorMeta w = ctx.input_meta("W");
  meta::lookup_table_v2_grad(ctx, w, ctx.input_meta("Ids"), ctx.input_meta("Out@GRAD"));
  const Shape shape = w.shape;
  ctx.set_output("W@GRAD", shape, w.dtype);
}

std::vector<AttrDef> layer_norm_attrs() {
  return {attr("epsilon", Attribute(1e-5f)),
          attr("begin_norm_axis", Attribute(int32_t{1})),
          attr("use_mkldnn", Attribute(false)),
          attr("mkldnn_data_type", Attribute("float32")),
          attr("is_test", Attribute(false))};
}

// is_sparse asks Paddle for a SelectedRows gradient; ctp's is dense (the
// same values), see docs/executor.md. The distributed-table attributes
// change nothing in one program.
std::vector<AttrDef> lookup_table_v2_attrs() {
  return {attr("is_sparse", Attribute(false)),
          attr("is_distributed", Attribute(false)),
          attr("padding_idx", Attribute(int64_t{-1}), {AttrType::INT}),
          attr("remote_prefetch", Attribute(false)),
          attr("entry_config", Attribute("")),
          attr("is_test", Attribute(false)),
          attr("entry", Attribute("none")),
          attr("table_class", Attribute("none")),
          attr("table_names", strings({})),
          attr("trainer_id", Attribute(int32_t{0})),
          attr("grad_inplace", Attribute(false)),
          attr("epmap", strings({})),
          attr("height_sections", longs({}), {AttrType::INTS})};
}

}  // namespace

void add_nlp_op_defs(OpRegistry& r) {
  add_def(r,
          {"layer_norm",
           {one("X"), optional_one("Scale"), optional_one("Bias")},
           {one("Y"), optional_one("Mean"), optional_one("Variance")},
           layer_norm_attrs()},
          infer_layer_norm,
          grad_op("layer_norm_grad", {"X", "Scale", "Bias", "Mean", "Variance", "Y@GRAD"},
                  {"X@GRAD", "Scale@GRAD", "Bias@GRAD"}));
  add_def(r,
          {"layer_norm_grad",
           {one("X"), optional_one("Scale"), optional_one("Bias"), one("Mean"), one("Variance"),
            one("Y@GRAD")},
           {optional_one("X@GRAD"), optional_one("Scale@GRAD"), optional_one("Bias@GRAD")},
           layer_norm_attrs()},
          infer_layer_norm_grad);
  add_def(r, {"lookup_table_v2", {one("W"), one("Ids")}, {one("Out")}, lookup_table_v2_attrs()},
          infer_lookup_table_v2,
          grad_op("lookup_table_v2_grad", {"W", "Ids", "Out@GRAD"}, {"W@GRAD"}));
  add_def(r,
          {"lookup_table_v2_grad",
           {shape_only(one("W")), one("Ids"), one("Out@GRAD")},
           {optional_one("W@GRAD")},
           lookup_table_v2_attrs()},
          infer_lookup_table_v2_grad);
}

CTP_REGISTER_OP_DEFS(add_nlp_op_defs);

}  // namespace ctp::defs
