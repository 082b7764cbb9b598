#include "samples/static_layers.h"

#include <cmath>

#include "ops/schema/op_def.h"

namespace ctp::samples {
namespace {

Attribute ints(std::vector<int32_t> values) { return Attribute(std::move(values)); }

}  // namespace

StaticLayers::StaticLayers(ProgramBuilder& startup, ProgramBuilder& main, int32_t init_seed)
    : startup_(startup), main_(main), init_seed_(init_seed) {}

std::string StaticLayers::unique(const std::string& layer) {
  return layer + "_" + std::to_string(layer_counts_[layer]++);
}

// A layer's outputs are <layer>.tmp_0, .tmp_1, ... in the order it makes them;
// the schema's inference gives them their shapes.
std::string StaticLayers::tmp(const std::string& layer_name, DataType dtype) {
  const std::string name = layer_name + ".tmp_" + std::to_string(tmp_counts_[layer_name]++);
  main_.tmp(name, {}, dtype);
  return name;
}

DataType StaticLayers::dtype_of(const std::string& var) {
  const Var* v = main_.block().find_var(var);
  if (!v) throw Error("static layers: no var '" + var + "' in the main program");
  return v->dtype;
}

void StaticLayers::init(const std::string& name, const std::vector<int64_t>& shape,
                        ParamInit init) {
  const char* type = init.kind == ParamInit::Kind::Constant  ? "fill_constant"
                     : init.kind == ParamInit::Kind::Uniform ? "uniform_random"
                                                             : "gaussian_random";
  OpBuilder op = startup_.op(type);
  op.out("Out", name)
      .attr("shape", Attribute(shape))
      .attr("dtype", Attribute(static_cast<int32_t>(startup_.block().var(name).dtype)))
      .role(op_role::kForward);
  switch (init.kind) {
    case ParamInit::Kind::Constant: op.attr("value", Attribute(init.a)); break;
    case ParamInit::Kind::Uniform:
      op.attr("min", Attribute(init.a)).attr("max", Attribute(init.b))
          .attr("seed", Attribute(init_seed_));
      break;
    case ParamInit::Kind::Normal:
      op.attr("mean", Attribute(init.a)).attr("std", Attribute(init.b))
          .attr("seed", Attribute(init_seed_));
      break;
  }
}

std::string StaticLayers::param(const std::string& name, std::vector<int64_t> shape,
                                ParamInit how) {
  startup_.param(name, shape);
  main_.param(name, shape);
  init(name, shape, how);
  parameters_.push_back(name);
  return name;
}

// batch_norm's moving statistics: persistable, not trained.
std::string StaticLayers::statistic(const std::string& name, std::vector<int64_t> shape,
                                    float value) {
  startup_.persistable(name, shape);
  main_.persistable(name, shape);
  init(name, shape, ParamInit::constant(value));
  return name;
}

void StaticLayers::infer(OpBuilder builder) {
  Op& op = builder.op();
  if (!op.attr(kOpRoleAttr)) builder.role(op_role::kForward);
  const OpDef* def = OpRegistry::global().find(op.type);
  if (!def || !def->infer_shape)
    throw Error("static layers: op '" + op.type + "' has no schema with shape inference");
  def->infer_shape(op, main_.block());
}

std::string StaticLayers::data(const std::string& name, std::vector<int64_t> shape,
                               DataType dtype) {
  main_.data(name, std::move(shape), dtype);
  return name;
}

std::string StaticLayers::bias_add(const std::string& layer_name, const std::string& x,
                                   int64_t size, int32_t axis) {
  const std::string bias = param(layer_name + ".b_0", {size}, ParamInit::constant(0.0f));
  const std::string out = tmp(layer_name, dtype_of(x));
  infer(main_.op("elementwise_add").in("X", x).in("Y", bias).out("Out", out)
            .attr("axis", Attribute(axis)));
  return out;
}

std::string StaticLayers::conv2d(const std::string& x, const Conv2dOptions& o) {
  const std::string name = unique("conv2d");
  const Var& input = main_.block().var(x);
  if (input.shape.size() != 4)
    throw Error("static layers: conv2d of '" + x + "' needs an NCHW input");
  const int64_t in_channels = input.shape[1];
  const int64_t fan_in = in_channels / o.groups * o.kernel * o.kernel;
  // He (MSRA) normal: keeps the activations' scale through relu layers.
  const std::string filter =
      param(name + ".w_0", {o.filters, in_channels / o.groups, o.kernel, o.kernel},
            ParamInit::normal(std::sqrt(2.0f / static_cast<float>(fan_in))));
  const std::string out = tmp(name, input.dtype);
  const auto s = static_cast<int32_t>(o.stride);
  const auto p = static_cast<int32_t>(o.padding);
  infer(main_.op("conv2d").in("Input", x).in("Filter", filter).out("Output", out)
            .attr("strides", ints({s, s})).attr("paddings", ints({p, p}))
            .attr("dilations", ints({1, 1})).attr("groups", Attribute(static_cast<int32_t>(o.groups)))
            .attr("padding_algorithm", Attribute(std::string("EXPLICIT")))
            .attr("data_format", Attribute(std::string("NCHW"))));
  return o.bias ? bias_add(name, out, o.filters, 1) : out;
}

std::string StaticLayers::batch_norm(const std::string& x, bool relu, float momentum,
                                     float epsilon) {
  const std::string name = unique("batch_norm");
  const Var& input = main_.block().var(x);
  if (input.shape.size() < 2)
    throw Error("static layers: batch_norm of '" + x + "' needs a channel dim");
  const int64_t channels = input.shape[1];
  const DataType dtype = input.dtype;
  const std::string scale = param(name + ".w_0", {channels}, ParamInit::constant(1.0f));
  const std::string bias = param(name + ".b_0", {channels}, ParamInit::constant(0.0f));
  const std::string mean = statistic(name + ".w_1", {channels}, 0.0f);
  const std::string variance = statistic(name + ".w_2", {channels}, 1.0f);
  const std::string saved_mean = tmp(name, DataType::FP32);
  const std::string saved_variance = tmp(name, DataType::FP32);
  const std::string out = tmp(name, dtype);
  // MeanOut/VarianceOut are the moving statistics themselves, updated in place.
  infer(main_.op("batch_norm").in("X", x).in("Scale", scale).in("Bias", bias)
            .in("Mean", mean).in("Variance", variance).out("Y", out).out("MeanOut", mean)
            .out("VarianceOut", variance).out("SavedMean", saved_mean)
            .out("SavedVariance", saved_variance)
            .attr("momentum", Attribute(momentum)).attr("epsilon", Attribute(epsilon))
            .attr("is_test", Attribute(false)).attr("data_layout", Attribute(std::string("NCHW")))
            .attr("use_global_stats", Attribute(false)));
  if (!relu) return out;
  const std::string activated = tmp(name, dtype);
  infer(main_.op("relu").in("X", out).out("Out", activated));
  return activated;
}

std::string StaticLayers::pool2d(const std::string& x, const Pool2dOptions& o) {
  const std::string name = unique("pool2d");
  const std::string out = tmp(name, dtype_of(x));
  const auto k = static_cast<int32_t>(o.kernel);
  const auto s = static_cast<int32_t>(o.stride);
  const auto p = static_cast<int32_t>(o.padding);
  infer(main_.op("pool2d").in("X", x).out("Out", out)
            .attr("pooling_type", Attribute(o.type)).attr("ksize", ints({k, k}))
            .attr("strides", ints({s, s})).attr("paddings", ints({p, p}))
            .attr("global_pooling", Attribute(o.global)).attr("adaptive", Attribute(false))
            .attr("exclusive", Attribute(true)).attr("ceil_mode", Attribute(false))
            .attr("padding_algorithm", Attribute(std::string("EXPLICIT")))
            .attr("data_format", Attribute(std::string("NCHW"))));
  return out;
}

std::string StaticLayers::fc(const std::string& x, int64_t size, int32_t num_flatten_dims) {
  const std::string name = unique("fc");
  const Var& input = main_.block().var(x);
  int64_t in_features = 1;
  for (std::size_t d = static_cast<std::size_t>(num_flatten_dims); d < input.shape.size(); ++d)
    in_features *= input.shape[d];
  if (in_features <= 0)
    throw Error("static layers: fc of '" + x + "' needs known dims after dim " +
                std::to_string(num_flatten_dims));
  const float limit = std::sqrt(6.0f / static_cast<float>(in_features + size));  // Xavier
  const std::string w = param(name + ".w_0", {in_features, size}, ParamInit::uniform(limit));
  const std::string product = tmp(name, input.dtype);
  infer(main_.op("mul").in("X", x).in("Y", w).out("Out", product)
            .attr("x_num_col_dims", Attribute(num_flatten_dims))
            .attr("y_num_col_dims", Attribute(int32_t{1})));
  return bias_add(name, product, size, num_flatten_dims);
}

std::string StaticLayers::linear(const std::string& x, int64_t size, float init_std) {
  const std::string name = unique("linear");
  const Var& input = main_.block().var(x);
  if (input.shape.empty() || input.shape.back() <= 0)
    throw Error("static layers: linear of '" + x + "' needs a known last dim");
  const std::string w =
      param(name + ".w_0", {input.shape.back(), size}, ParamInit::normal(init_std));
  const std::string product = tmp(name, input.dtype);
  infer(main_.op("matmul_v2").in("X", x).in("Y", w).out("Out", product)
            .attr("trans_x", Attribute(false)).attr("trans_y", Attribute(false)));
  return bias_add(name, product, size, -1);
}

std::string StaticLayers::embedding(const std::string& ids, int64_t vocab, int64_t dim,
                                    float init_std) {
  const std::string name = unique("embedding");
  const std::string table = param(name + ".w_0", {vocab, dim}, ParamInit::normal(init_std));
  const std::string out = tmp(name, DataType::FP32);
  infer(main_.op("lookup_table_v2").in("Ids", ids).in("W", table).out("Out", out)
            .attr("padding_idx", Attribute(int64_t{-1})));
  return out;
}

std::string StaticLayers::layer_norm(const std::string& x, int32_t begin_norm_axis,
                                     float epsilon) {
  const std::string name = unique("layer_norm");
  const Var& input = main_.block().var(x);
  int64_t normalized = 1;
  for (std::size_t d = static_cast<std::size_t>(begin_norm_axis); d < input.shape.size(); ++d)
    normalized *= input.shape[d];
  const DataType dtype = input.dtype;
  const std::string scale = param(name + ".w_0", {normalized}, ParamInit::constant(1.0f));
  const std::string bias = param(name + ".b_0", {normalized}, ParamInit::constant(0.0f));
  const std::string mean = tmp(name, DataType::FP32);
  const std::string variance = tmp(name, DataType::FP32);
  const std::string out = tmp(name, dtype);
  infer(main_.op("layer_norm").in("X", x).in("Scale", scale).in("Bias", bias).out("Y", out)
            .out("Mean", mean).out("Variance", variance)
            .attr("begin_norm_axis", Attribute(begin_norm_axis))
            .attr("epsilon", Attribute(epsilon)));
  return out;
}

std::string StaticLayers::dropout(const std::string& x, float probability) {
  if (probability == 0.0f) return x;
  const std::string name = unique("dropout");
  const std::string out = tmp(name, dtype_of(x));
  const std::string mask = tmp(name, DataType::UINT8);
  infer(main_.op("dropout").in("X", x).out("Out", out).out("Mask", mask)
            .attr("dropout_prob", Attribute(probability)).attr("is_test", Attribute(false))
            .attr("fix_seed", Attribute(false)).attr("seed", Attribute(int32_t{0}))
            .attr("dropout_implementation", Attribute(std::string("upscale_in_train"))));
  return out;
}

std::string StaticLayers::unary(const std::string& type, const std::string& x) {
  const std::string out = tmp(unique(type), dtype_of(x));
  infer(main_.op(type).in("X", x).out("Out", out));
  return out;
}

std::string StaticLayers::gelu(const std::string& x) {
  const std::string out = tmp(unique("gelu"), dtype_of(x));
  infer(main_.op("gelu").in("X", x).out("Out", out).attr("approximate", Attribute(false)));
  return out;
}

std::string StaticLayers::softmax(const std::string& x, int32_t axis) {
  const std::string out = tmp(unique("softmax"), dtype_of(x));
  infer(main_.op("softmax").in("X", x).out("Out", out).attr("axis", Attribute(axis)));
  return out;
}

std::string StaticLayers::scale(const std::string& x, float factor) {
  const std::string out = tmp(unique("scale"), dtype_of(x));
  infer(main_.op("scale").in("X", x).out("Out", out).attr("scale", Attribute(factor))
            .attr("bias", Attribute(0.0f)).attr("bias_after_scale", Attribute(true)));
  return out;
}

std::string StaticLayers::add(const std::string& x, const std::string& y, int32_t axis) {
  const std::string out = tmp(unique("elementwise_add"), dtype_of(x));
  infer(main_.op("elementwise_add").in("X", x).in("Y", y).out("Out", out)
            .attr("axis", Attribute(axis)));
  return out;
}

std::string StaticLayers::matmul(const std::string& x, const std::string& y, bool trans_x,
                                 bool trans_y) {
  const std::string out = tmp(unique("matmul_v2"), dtype_of(x));
  infer(main_.op("matmul_v2").in("X", x).in("Y", y).out("Out", out)
            .attr("trans_x", Attribute(trans_x)).attr("trans_y", Attribute(trans_y)));
  return out;
}

std::string StaticLayers::reshape(const std::string& x, std::vector<int32_t> shape) {
  const std::string name = unique("reshape2");
  const std::string out = tmp(name, dtype_of(x));
  const std::string xshape = tmp(name, dtype_of(x));
  infer(main_.op("reshape2").in("X", x).out("Out", out).out("XShape", xshape)
            .attr("shape", ints(std::move(shape))));
  return out;
}

std::string StaticLayers::transpose(const std::string& x, std::vector<int32_t> perm) {
  const std::string name = unique("transpose2");
  const std::string out = tmp(name, dtype_of(x));
  const std::string xshape = tmp(name, dtype_of(x));
  infer(main_.op("transpose2").in("X", x).out("Out", out).out("XShape", xshape)
            .attr("axis", ints(std::move(perm))));
  return out;
}

std::string StaticLayers::flash_attention(const std::string& q, const std::string& k,
                                          const std::string& v, bool causal,
                                          bool return_softmax) {
  const std::string name = unique("flash_attn");
  const DataType dtype = dtype_of(q);
  const std::string out = tmp(name, dtype);
  const std::string softmax = tmp(name, dtype);
  const std::string softmax_lse = tmp(name, DataType::FP32);
  const std::string seed_offset = tmp(name, DataType::INT64);
  infer(main_.op("flash_attn").in("q", q).in("k", k).in("v", v).out("out", out)
            .out("softmax", softmax).out("softmax_lse", softmax_lse)
            .out("seed_offset", seed_offset)
            .attr("dropout", Attribute(0.0f)).attr("causal", Attribute(causal))
            .attr("return_softmax", Attribute(return_softmax)).attr("is_test", Attribute(false))
            .attr("rng_name", Attribute(std::string())));
  return out;
}

std::string StaticLayers::flatten(const std::string& x, int32_t start_axis, int32_t stop_axis) {
  const std::string name = unique("flatten_contiguous_range");
  const std::string out = tmp(name, dtype_of(x));
  const std::string xshape = tmp(name, dtype_of(x));
  infer(main_.op("flatten_contiguous_range").in("X", x).out("Out", out).out("XShape", xshape)
            .attr("start_axis", Attribute(start_axis)).attr("stop_axis", Attribute(stop_axis)));
  return out;
}

std::string StaticLayers::cross_entropy_loss(const std::string& logits, const std::string& label) {
  const std::string name = unique("softmax_with_cross_entropy");
  const DataType dtype = dtype_of(logits);
  const std::string softmax_out = tmp(name, dtype);
  const std::string loss = tmp(name, dtype);
  infer(main_.op("softmax_with_cross_entropy").in("Logits", logits).in("Label", label)
            .out("Softmax", softmax_out).out("Loss", loss)
            .attr("soft_label", Attribute(false)).attr("axis", Attribute(int32_t{-1})));
  const std::string mean = tmp(unique("mean"), dtype);
  infer(main_.op("mean").in("X", loss).out("Out", mean)
            .role(op_role::kForward | op_role::kLoss));
  return mean;
}

}  // namespace ctp::samples
