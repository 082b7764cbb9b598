// Convolution and image layers: conv2d, depthwise_conv2d, pool2d and
// batch_norm, with grads and their grad makers. Slots and attributes are
// Paddle's (the op makers of paddle/fluid/operators and the extra attributes
// saved models carry); the rules are in meta_conv.h and meta_batch_norm.h.
#include "ops/schema/defs_common.h"
#include "ops/schema/grad_maker.h"
#include "ops/schema/meta_batch_norm.h"
#include "ops/schema/meta_conv.h"

namespace ctp::defs {
namespace {

void infer_conv2d(InferContext& ctx) {
  const TensorMeta input = ctx.input_meta("Input");
  ctx.set_output("Output", meta::conv2d(ctx, input, ctx.input_meta("Filter")).out_shape,
                 input.dtype);
}

void infer_conv2d_grad(InferContext& ctx) {
  meta::conv2d_grad(ctx, ctx.input_meta("Input"), ctx.input_meta("Filter"),
                    ctx.input_meta("Output@GRAD"));
  ctx.pass_through("Input", "Input@GRAD");
  ctx.pass_through("Filter", "Filter@GRAD");
}

void infer_pool2d(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  ctx.set_output("Out", meta::pool2d(ctx, x).out_shape, x.dtype);
}

void infer_pool2d_grad(InferContext& ctx) {
  meta::pool2d_grad(ctx, ctx.input_meta("X"), ctx.input_meta("Out"), ctx.input_meta("Out@GRAD"));
  ctx.pass_through("X", "X@GRAD");
}

void infer_batch_norm(InferContext& ctx) {
  const TensorMeta x = ctx.input_meta("X");
  const meta::BatchNormMeta m =
      meta::batch_norm(ctx, x, ctx.input_meta("Scale"), ctx.input_meta("Bias"),
                       ctx.input_meta("Mean"), ctx.input_meta("Variance"));
  ctx.set_output("Y", x.shape, x.dtype);
  for (const char* slot : {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"})
    ctx.set_output(slot, m.channel_shape, m.stats_dtype);
  ctx.set_output("ReserveSpace", {0}, x.dtype);  // unused: no elements
}

void infer_batch_norm_grad(InferContext& ctx) {
  meta::batch_norm_grad(ctx, ctx.input_meta("X"), ctx.input_meta("Scale"),
                        ctx.input_meta("SavedMean"), ctx.input_meta("SavedVariance"),
                        ctx.input_meta("Y@GRAD"));
  ctx.pass_through("X", "X@GRAD");
  ctx.pass_through("Scale", "Scale@GRAD");
  ctx.pass_through("Scale", "Bias@GRAD");
}

// Attributes Paddle's oneDNN, cuDNN and quantization paths put on saved ops;
// ctp accepts them and computes the plain op.
std::vector<AttrDef> backend_attrs() {
  return {attr("is_test", Attribute(false), {AttrType::INT}),  // old models save 0/1
          attr("use_cudnn", Attribute(true)),
          attr("use_mkldnn", Attribute(false)),
          attr("use_quantizer", Attribute(false)),
          attr("mkldnn_data_type", Attribute("float32"))};
}

std::vector<AttrDef> conv2d_attrs() {
  std::vector<AttrDef> a = {attr("strides", ints({1, 1}), {AttrType::LONGS}),
                            attr("paddings", ints({0, 0}), {AttrType::LONGS}),
                            attr("padding_algorithm", Attribute("EXPLICIT")),
                            attr("dilations", ints({1, 1}), {AttrType::LONGS}),
                            attr("groups", Attribute(int32_t{1})),
                            attr("data_format", Attribute("NCHW")),
                            attr("fuse_relu_before_depthwise_conv", Attribute(false)),
                            attr("fuse_relu", Attribute(false)),
                            attr("fuse_activation", Attribute("")),
                            attr("fuse_alpha", Attribute(0.0f)),
                            attr("fuse_beta", Attribute(0.0f)),
                            attr("fuse_brelu", Attribute(false)),
                            attr("fuse_brelu_threshold", Attribute(6.0f)),
                            attr("use_addto", Attribute(false)),
                            attr("fuse_residual_connection", Attribute(false)),
                            attr("Scale_in", Attribute(1.0f)),
                            attr("Scale_out", Attribute(1.0f)),
                            attr("Scale_in_eltwise", Attribute(1.0f)),
                            attr("Scale_weights", floats({1.0f})),
                            attr("force_fp32_output", Attribute(false)),
                            attr("workspace_size_MB", Attribute(int32_t{512})),
                            attr("exhaustive_search", Attribute(false))};
  for (AttrDef& d : backend_attrs()) a.push_back(std::move(d));
  return a;
}

std::vector<AttrDef> pool2d_attrs() {
  std::vector<AttrDef> a = {required("pooling_type", AttrType::STRING),
                            required("ksize", AttrType::INTS, {AttrType::LONGS}),
                            attr("global_pooling", Attribute(false)),
                            attr("strides", ints({1, 1}), {AttrType::LONGS}),
                            attr("paddings", ints({0, 0}), {AttrType::LONGS}),
                            attr("exclusive", Attribute(true)),
                            attr("adaptive", Attribute(false)),
                            attr("ceil_mode", Attribute(false)),
                            attr("data_format", Attribute("NCHW")),
                            attr("padding_algorithm", Attribute("EXPLICIT"))};
  for (AttrDef& d : backend_attrs()) a.push_back(std::move(d));
  return a;
}

std::vector<AttrDef> batch_norm_attrs() {
  return {attr("is_test", Attribute(false), {AttrType::INT}),
          attr("momentum", Attribute(0.9f)),
          attr("epsilon", Attribute(1e-5f)),
          attr("data_layout", Attribute("NCHW")),
          attr("use_global_stats", Attribute(false)),
          attr("trainable_statistics", Attribute(false)),
          attr("fuse_with_relu", Attribute(false)),
          attr("use_mkldnn", Attribute(false))};
}

// Paddle's BatchNormGradMaker: the saved statistics, and the running ones
// (MeanOut, VarianceOut) only where they normalized (use_global_stats, is_test).
GradMaker batch_norm_grad_maker() {
  const GradMaker common = grad_op(
      "batch_norm_grad",
      {"X", "Scale", "Bias", "SavedMean", "SavedVariance", "ReserveSpace", "Y@GRAD"},
      {"X@GRAD", "Scale@GRAD", "Bias@GRAD"});
  return GradMaker::ops([common](const GradMakerContext& ctx) {
    std::vector<Op> ops = common.make(ctx);
    const auto set = [&](const char* name) {
      const Attribute* a = ctx.attr(name);
      return a && (a->type() == AttrType::BOOLEAN || a->type() == AttrType::INT ||
                   a->type() == AttrType::LONG) &&
             a->as_int64() != 0;
    };
    if (set("use_global_stats") || set("is_test")) {
      ops[0].set_input("Mean", ctx.output("MeanOut"));
      ops[0].set_input("Variance", ctx.output("VarianceOut"));
    }
    return ops;
  });
}

void add_conv_defs(OpRegistry& r, const std::string& type) {
  add_def(r,
          {type,
           {one("Input"), one("Filter"), optional_one("Bias"), optional_one("ResidualData")},
           {one("Output")},
           conv2d_attrs()},
          infer_conv2d,
          grad_op(type + "_grad", {"Input", "Filter", "Output@GRAD"},
                  {"Input@GRAD", "Filter@GRAD"}));
  add_def(r,
          {type + "_grad",
           // Paddle 1.x grad ops carry the (empty) oneDNN Bias slots too.
           {one("Input"), one("Filter"), optional_one("Bias"), one("Output@GRAD")},
           {optional_one("Input@GRAD"), optional_one("Filter@GRAD"), optional_one("Bias@GRAD")},
           conv2d_attrs()},
          infer_conv2d_grad);
}

}  // namespace

void add_cv_op_defs(OpRegistry& r) {
  add_conv_defs(r, "conv2d");
  add_conv_defs(r, "depthwise_conv2d");
  add_def(r, {"pool2d", {one("X")}, {one("Out")}, pool2d_attrs()}, infer_pool2d,
          grad_op("pool2d_grad", {"X", "Out", "Out@GRAD"}, {"X@GRAD"}));
  add_def(r,
          {"pool2d_grad", {one("X"), one("Out"), one("Out@GRAD")}, {optional_one("X@GRAD")},
           pool2d_attrs()},
          infer_pool2d_grad);
  add_def(r,
          {"batch_norm",
           {one("X"), one("Scale"), one("Bias"), one("Mean"), one("Variance"),
            optional_one("MomentumTensor")},
           {one("Y"), optional_one("MeanOut"), optional_one("VarianceOut"),
            optional_one("SavedMean"), optional_one("SavedVariance"),
            optional_one("ReserveSpace")},
           batch_norm_attrs()},
          infer_batch_norm, batch_norm_grad_maker());
  add_def(r,
          {"batch_norm_grad",
           {one("X"), one("Scale"), optional_one("Bias"), optional_one("Mean"),
            optional_one("Variance"), one("SavedMean"), one("SavedVariance"),
            optional_one("ReserveSpace"), one("Y@GRAD")},
           {optional_one("X@GRAD"), optional_one("Scale@GRAD"), optional_one("Bias@GRAD")},
           batch_norm_attrs()},
          infer_batch_norm_grad);
}

CTP_REGISTER_OP_DEFS(add_cv_op_defs);

}  // namespace ctp::defs
