#include "samples/mlp_model.h"

#include <cctype>
#include <cmath>

#include "program_ir/builder.h"

namespace ctp::samples {
namespace {

std::string grad(const std::string& name) { return name + "@GRAD"; }

struct Layer {
  std::string input, weight, bias, product, sum, activation;
  int64_t in_dim, out_dim;
  bool relu;
  std::string weight_used, bias_used;  // what mul and elementwise_add read: cast copies under AMP
};

// Declares a var in both programs (startup needs the persistables it initializes).
class TwoPrograms {
 public:
  TwoPrograms() = default;
  ProgramBuilder startup, main;

  void persistable(const std::string& name, std::vector<int64_t> shape, DataType dtype) {
    startup.persistable(name, shape, dtype);
    main.persistable(name, std::move(shape), dtype);
  }
  void param(const std::string& name, std::vector<int64_t> shape, DataType dtype) {
    startup.param(name, shape, dtype);
    main.param(name, std::move(shape), dtype);
  }
  void fill(const std::string& name, std::vector<int64_t> shape, DataType dtype, float value) {
    startup.op("fill_constant")
        .out("Out", name)
        .attr("shape", Attribute(std::move(shape)))
        .attr("dtype", Attribute(static_cast<int32_t>(dtype)))
        .attr("value", Attribute(value))
        .role(op_role::kForward);
  }
};

// The names and casts of mixed precision; with compute == storage it names
// the vars themselves and inserts nothing.
class Precision {
 public:
  Precision(DataType storage, DataType compute) : storage_(storage), compute_(compute) {}
  bool mixed() const { return storage_ != compute_; }
  DataType compute() const { return compute_; }
  std::string compute_copy(const std::string& var) const {
    if (!mixed()) return var;
    std::string suffix(to_string(compute_));
    for (char& ch : suffix) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return var + ".cast_" + suffix;
  }
  // Declares `to` in dtype to_dtype with from's shape and casts into it.
  static void cast(ProgramBuilder& m, const std::string& from, const std::string& to,
                   DataType to_dtype, int32_t role) {
    const Var& source = m.block().var(from);
    const DataType from_dtype = source.dtype;
    if (!m.block().has_var(to)) m.tmp(to, source.shape, to_dtype);
    m.op("cast").in("X", from).out("Out", to)
        .attr("in_dtype", Attribute(static_cast<int32_t>(from_dtype)))
        .attr("out_dtype", Attribute(static_cast<int32_t>(to_dtype)))
        .role(role);
  }

 private:
  DataType storage_, compute_;
};

}  // namespace

OptimizerKind optimizer_from_string(const std::string& name) {
  if (name == "sgd") return OptimizerKind::SGD;
  if (name == "momentum") return OptimizerKind::Momentum;
  if (name == "adam") return OptimizerKind::Adam;
  throw Error("unknown optimizer '" + name + "' (expected sgd, momentum or adam)");
}

std::string to_string(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::SGD: return "sgd";
    case OptimizerKind::Momentum: return "momentum";
    case OptimizerKind::Adam: return "adam";
  }
  return "?";
}

MlpPrograms build_mlp(const MlpConfig& c) {
  if (c.input_dim < 1 || c.classes < 2)
    throw Error("MLP needs input_dim >= 1 and classes >= 2");
  const DataType dt = c.dtype;
  if (c.amp && (dt != DataType::FP32 || (*c.amp != DataType::FP16 && *c.amp != DataType::BF16)))
    throw Error("mixed precision computes in FP16 or BF16 on FP32 parameters, not in " +
                std::string(to_string(*c.amp)) + " on " + std::string(to_string(dt)));
  if (!(c.loss_scale > 0) || !std::isfinite(c.loss_scale))
    throw Error("the loss scale must be a positive finite number, not " +
                std::to_string(c.loss_scale));
  const Precision precision(dt, c.amp.value_or(dt));
  const DataType ct = precision.compute();
  TwoPrograms p;
  ProgramBuilder& m = p.main;
  MlpPrograms out;
  m.data(out.input, {-1, c.input_dim}, dt);
  m.data(out.label, {-1, 1}, DataType::INT64);

  // Layers: fc_i = relu?(x W + b).
  std::vector<Layer> layers;
  std::vector<int64_t> widths = c.hidden;
  widths.push_back(c.classes);
  std::string input = precision.compute_copy(out.input);
  if (precision.mixed()) Precision::cast(m, out.input, input, ct, op_role::kForward);
  int64_t in_dim = c.input_dim;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    const std::string fc = "fc_" + std::to_string(i);
    // input: the previous layer's output, set when the layers are built.
    Layer l{"", fc + ".w_0", fc + ".b_0", fc + ".tmp_0", fc + ".tmp_1", fc + ".tmp_2",
            in_dim, widths[i], i + 1 < widths.size(), "", ""};
    in_dim = l.out_dim;
    layers.push_back(l);
  }
  // Parameters first: under AMP, every parameter's 16-bit copy is made at the
  // start of the step, the casts one after another (a GPU runs such a run of
  // independent ops as one launch; executor/op_batching.h).
  for (Layer& l : layers) {
    p.param(l.weight, {l.in_dim, l.out_dim}, dt);
    p.param(l.bias, {l.out_dim}, dt);
    l.weight_used = precision.compute_copy(l.weight);
    l.bias_used = precision.compute_copy(l.bias);
    out.parameters.push_back(l.weight);
    out.parameters.push_back(l.bias);
    // Xavier-uniform weights, zero biases (fluid.layers.fc's defaults).
    const float limit = std::sqrt(6.0f / static_cast<float>(l.in_dim + l.out_dim));
    p.startup.op("uniform_random")
        .out("Out", l.weight)
        .attr("shape", Attribute(std::vector<int64_t>{l.in_dim, l.out_dim}))
        .attr("dtype", Attribute(static_cast<int32_t>(dt)))
        .attr("min", Attribute(-limit))
        .attr("max", Attribute(limit))
        .attr("seed", Attribute(c.init_seed))
        .role(op_role::kForward);
    p.fill(l.bias, {l.out_dim}, dt, 0.0f);

    if (precision.mixed()) {
      Precision::cast(m, l.weight, l.weight_used, ct, op_role::kForward);
      Precision::cast(m, l.bias, l.bias_used, ct, op_role::kForward);
    }
  }
  for (Layer& l : layers) {
    l.input = input;
    m.tmp(l.product, {-1, l.out_dim}, ct);
    m.tmp(l.sum, {-1, l.out_dim}, ct);
    m.op("mul").in("X", l.input).in("Y", l.weight_used).out("Out", l.product)
        .attr("x_num_col_dims", Attribute(int32_t{1}))
        .attr("y_num_col_dims", Attribute(int32_t{1}))
        .role(op_role::kForward);
    m.op("elementwise_add").in("X", l.product).in("Y", l.bias_used).out("Out", l.sum)
        .attr("axis", Attribute(int32_t{1}))
        .role(op_role::kForward);
    if (l.relu) {
      m.tmp(l.activation, {-1, l.out_dim}, ct);
      m.op("relu").in("X", l.sum).out("Out", l.activation).role(op_role::kForward);
      input = l.activation;
    }
  }

  // Softmax and loss in dt: under AMP the 16-bit logits are cast up first.
  const std::string logits = layers.back().sum;
  const std::string loss_logits = precision.mixed() ? logits + ".cast_fp32" : logits;
  if (precision.mixed()) Precision::cast(m, logits, loss_logits, dt, op_role::kForward);
  out.probabilities = "softmax_with_cross_entropy_0.tmp_0";
  const std::string losses = "softmax_with_cross_entropy_0.tmp_1";
  out.loss = "mean_0.tmp_0";
  m.tmp(out.probabilities, {-1, c.classes}, dt);
  m.tmp(losses, {-1, 1}, dt);
  m.tmp(out.loss, {1}, dt);
  m.op("softmax_with_cross_entropy")
      .in("Logits", loss_logits).in("Label", out.label)
      .out("Softmax", out.probabilities).out("Loss", losses)
      .attr("soft_label", Attribute(false))
      .attr("ignore_index", Attribute(int32_t{-100}))
      .attr("numeric_stable_mode", Attribute(true))
      .attr("axis", Attribute(int32_t{-1}))
      .role(op_role::kForward);
  m.op("mean").in("X", losses).out("Out", out.loss).role(op_role::kForward | op_role::kLoss);
  out.eval = m.program();  // the forward ops, before backward and optimizer

  // Backward, in reverse order of the forward ops.
  for (const std::string& v : {out.loss, losses, loss_logits})
    m.tmp(grad(v), m.block().var(v).shape, dt);
  m.op("fill_constant").out("Out", grad(out.loss))
      .attr("shape", Attribute(std::vector<int64_t>{1}))
      .attr("dtype", Attribute(static_cast<int32_t>(dt)))
      .attr("value", Attribute(c.loss_scale))
      .role(op_role::kBackward | op_role::kLoss);
  m.op("mean_grad").in("X", losses).in("Out@GRAD", grad(out.loss)).out("X@GRAD", grad(losses))
      .role(op_role::kBackward);
  m.op("softmax_with_cross_entropy_grad")
      .in("Label", out.label).in("Softmax", out.probabilities).in("Loss@GRAD", grad(losses))
      .out("Logits@GRAD", grad(loss_logits))
      .attr("soft_label", Attribute(false))
      .attr("ignore_index", Attribute(int32_t{-100}))
      .attr("numeric_stable_mode", Attribute(true))
      .attr("axis", Attribute(int32_t{-1}))
      .role(op_role::kBackward);
  if (precision.mixed())  // cast's gradient is the cast back
    Precision::cast(m, grad(loss_logits), grad(logits), ct, op_role::kBackward);
  for (std::size_t i = layers.size(); i-- > 0;) {
    const Layer& l = layers[i];
    for (const std::string& v : {l.sum, l.product, l.weight_used, l.bias_used})
      if (!m.block().has_var(grad(v))) m.tmp(grad(v), m.block().var(v).shape, ct);
    if (l.relu)  // the gradient of this layer's output reached tmp_2@GRAD first
      m.op("relu_grad").in("Out", l.activation).in("Out@GRAD", grad(l.activation))
          .out("X@GRAD", grad(l.sum)).role(op_role::kBackward);
    m.op("elementwise_add_grad")
        .in("X", l.product).in("Y", l.bias_used).in("Out@GRAD", grad(l.sum))
        .out("X@GRAD", grad(l.product)).out("Y@GRAD", grad(l.bias_used))
        .attr("axis", Attribute(int32_t{1}))
        .role(op_role::kBackward)
        .role_var({l.bias, grad(l.bias_used)});
    OpBuilder mul_grad = m.op("mul_grad");
    mul_grad.in("X", l.input).in("Y", l.weight_used).in("Out@GRAD", grad(l.product))
        .out("Y@GRAD", grad(l.weight_used))
        .attr("x_num_col_dims", Attribute(int32_t{1}))
        .attr("y_num_col_dims", Attribute(int32_t{1}))
        .role(op_role::kBackward)
        .role_var({l.weight, grad(l.weight_used)});
    if (i > 0) {
      m.tmp(grad(l.input), m.block().var(l.input).shape, ct);
      mul_grad.out("X@GRAD", grad(l.input));
    }
  }

  // Optimizer.
  const std::string lr = "learning_rate_0";
  p.persistable(lr, {1}, DataType::FP32);
  p.fill(lr, {1}, DataType::FP32, c.learning_rate);
  // Optimize role: after c_sync_comm_stream, so they read all-reduced
  // gradients. Every gradient is cast back, then unscaled, then every
  // parameter updated (as Paddle's AMP unscales all before it updates any):
  // runs of independent ops of one type, one launch each on a GPU.
  if (precision.mixed())
    for (const std::string& param : out.parameters)
      Precision::cast(m, grad(precision.compute_copy(param)), grad(param), dt,
                      op_role::kOptimize);
  if (c.loss_scale != 1.0f)
    for (const std::string& param : out.parameters)
      m.op("scale").in("X", grad(param)).out("Out", grad(param))
          .attr("scale", Attribute(1.0f / c.loss_scale))
          .role(op_role::kOptimize);
  for (const std::string& param : out.parameters) {
    const std::vector<int64_t> shape = m.block().var(param).shape;
    const std::vector<std::string> role_var{param, grad(param)};
    switch (c.optimizer) {
      case OptimizerKind::SGD:
        m.op("sgd").in("Param", param).in("Grad", grad(param)).in("LearningRate", lr)
            .out("ParamOut", param).role(op_role::kOptimize).role_var(role_var);
        break;
      case OptimizerKind::Momentum: {
        const std::string velocity = param + "_velocity_0";
        p.persistable(velocity, shape, dt);
        p.fill(velocity, shape, dt, 0.0f);
        m.op("momentum").in("Param", param).in("Grad", grad(param)).in("Velocity", velocity)
            .in("LearningRate", lr).out("ParamOut", param).out("VelocityOut", velocity)
            .attr("mu", Attribute(c.momentum)).attr("use_nesterov", Attribute(c.nesterov))
            .role(op_role::kOptimize).role_var(role_var);
        break;
      }
      case OptimizerKind::Adam: {
        const std::string m1 = param + "_moment1_0", m2 = param + "_moment2_0";
        const std::string b1 = param + "_beta1_pow_acc_0", b2 = param + "_beta2_pow_acc_0";
        p.persistable(m1, shape, dt);
        p.persistable(m2, shape, dt);
        p.persistable(b1, {1}, DataType::FP32);
        p.persistable(b2, {1}, DataType::FP32);
        p.fill(m1, shape, dt, 0.0f);
        p.fill(m2, shape, dt, 0.0f);
        p.fill(b1, {1}, DataType::FP32, c.beta1);  // Paddle starts the powers at beta
        p.fill(b2, {1}, DataType::FP32, c.beta2);
        m.op("adam").in("Param", param).in("Grad", grad(param)).in("LearningRate", lr)
            .in("Moment1", m1).in("Moment2", m2).in("Beta1Pow", b1).in("Beta2Pow", b2)
            .out("ParamOut", param).out("Moment1Out", m1).out("Moment2Out", m2)
            .out("Beta1PowOut", b1).out("Beta2PowOut", b2)
            .attr("beta1", Attribute(c.beta1)).attr("beta2", Attribute(c.beta2))
            .attr("epsilon", Attribute(c.epsilon)).attr("lazy_mode", Attribute(false))
            .attr("min_row_size_to_use_multithread", Attribute(int64_t{1000}))
            .attr("multi_precision", Attribute(false))
            .attr("use_global_beta_pow", Attribute(false))
            .role(op_role::kOptimize).role_var(role_var);
        break;
      }
    }
  }
  out.startup = p.startup.build();
  out.main = m.build();
  return out;
}

}  // namespace ctp::samples
