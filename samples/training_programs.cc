#include "samples/training_programs.h"

#include <sstream>

#include "program_ir/error.h"
#include "transpilers/minimize.h"

namespace ctp::samples {
namespace {

std::string number(double v) {
  std::ostringstream text;
  text << v;
  return text.str();
}

std::string loss_scaling_note(const std::optional<LossScalingOptions>& s) {
  if (!s) return "";
  if (!s->use_dynamic_loss_scaling) return ", static loss scaling " + number(s->init_loss_scaling);
  return ", dynamic loss scaling from " + number(s->init_loss_scaling) + " (x" +
         number(s->incr_ratio) + " after " + std::to_string(s->incr_every_n_steps) +
         " finite steps, x" + number(s->decr_ratio) + " after " +
         std::to_string(s->decr_every_n_nan_or_inf) + " overflowing)";
}

std::string precision_note(const ModelKind kind, const MlpConfig& model) {
  std::string note = ", " + std::string(to_string(model.dtype));
  // The MLP builds its own AMP program, with 16-bit gradients; the real
  // models get the AMP pass, whose parameter gradients stay FP32.
  if (model.amp)
    note += " parameters, " + std::string(to_string(*model.amp)) +
            (kind == ModelKind::Mlp ? " compute and gradients"
                                    : " compute where the AMP rewrite's lists say (FP32 gradients)");
  if (model.loss_scale != 1.0f) note += ", loss scale " + number(model.loss_scale);
  return note;
}

std::string optimizer_note(ModelKind kind, const MlpConfig& model) {
  std::ostringstream text;
  text << to_string(model.optimizer) << " (lr " << model.learning_rate << ")";
  return text.str() + precision_note(kind, model);
}

TrainingPrograms mlp_programs(const MlpConfig& c) {
  MlpPrograms mlp = build_mlp(c);
  TrainingPrograms p;
  p.startup = std::move(mlp.startup);
  p.main = std::move(mlp.main);
  p.eval = std::move(mlp.eval);
  p.inputs = {mlp.input, mlp.label};
  p.loss = mlp.loss;
  p.probabilities = mlp.probabilities;
  p.parameters = std::move(mlp.parameters);
  std::string shape = std::to_string(c.input_dim);
  for (int64_t h : c.hidden) shape += "-" + std::to_string(h);
  p.description = "MLP " + shape + "-" + std::to_string(c.classes) + ", " +
                  optimizer_note(ModelKind::Mlp, c);
  return p;
}

OptimizerOptions optimizer_options(const MlpConfig& c) {
  OptimizerOptions o;
  switch (c.optimizer) {
    case OptimizerKind::SGD: o.type = OptimizerType::kSgd; break;
    case OptimizerKind::Momentum:
      o.type = OptimizerType::kMomentum;
      o.momentum = c.momentum;
      o.use_nesterov = c.nesterov;
      break;
    case OptimizerKind::Adam:
      o.type = OptimizerType::kAdam;
      o.beta1 = c.beta1;
      o.beta2 = c.beta2;
      o.epsilon = c.epsilon;
      break;
  }
  o.learning_rate = c.learning_rate;
  return o;
}

// A real model's forward programs made trainable as `ctp minimize [--amp]`
// makes them: the mixed-precision rewrite (with --amp), the backward of the
// loss, then one update op per parameter.
TrainingPrograms minimized(const ModelChoice& choice, ModelPrograms model,
                           std::string description) {
  const MlpConfig& c = choice.mlp;
  TrainingPrograms p;
  p.startup = std::move(model.startup);
  p.main = std::move(model.main);
  MinimizeOptions options{.loss = model.loss, .no_grad_vars = {},
                          .optimizer = optimizer_options(c), .amp = std::nullopt};
  if (c.amp) options.amp = AmpOptions{.dtype = *c.amp, .loss_scaling = choice.loss_scaling};
  const MinimizeResult result = minimize(p.startup, p.main, options);
  if (result.loss_scaling) p.loss_scaling = result.loss_scaling->loss_scaling;
  p.inputs = model.inputs;
  p.inputs.push_back(model.label);
  p.loss = model.loss;
  p.parameters = std::move(model.parameters);
  p.description = std::move(description) + ", " + optimizer_note(choice.kind, c) +
                  (c.amp ? loss_scaling_note(choice.loss_scaling) : "");
  return p;
}

}  // namespace

ModelKind model_kind_from_string(const std::string& name) {
  if (name == "mlp") return ModelKind::Mlp;
  if (name == "resnet") return ModelKind::ResNet;
  if (name == "bert") return ModelKind::Bert;
  throw Error("unknown model '" + name + "' (expected mlp, resnet or bert)");
}

std::string to_string(ModelKind kind) {
  switch (kind) {
    case ModelKind::Mlp: return "mlp";
    case ModelKind::ResNet: return "resnet";
    case ModelKind::Bert: return "bert";
  }
  return "?";
}

void check_model_choice(const ModelChoice& choice) {
  const MlpConfig& c = choice.mlp;
  if (choice.kind == ModelKind::Mlp) {
    if (choice.loss_scaling)
      throw Error("the loss-scaling options apply to --model resnet and bert; the MLP has its "
                  "own static --loss-scale");
    return;
  }
  const std::string model = "--model " + to_string(choice.kind);
  // The real models are built in FP32; --amp rewrites them with the AMP
  // pass (transpilers/amp_rewrite.h), with loss scaling where asked
  // (transpilers/loss_scaling.h).
  if (c.dtype != DataType::FP32)
    throw Error(model + " trains in fp32 only, not " + std::string(to_string(c.dtype)));
  if (c.loss_scale != 1.0f)
    throw Error("--loss-scale is the MLP's static scale; " + model +
                " scales by --loss-scaling and --init-loss-scaling");
  if (choice.loss_scaling && !c.amp)
    throw Error("loss scaling needs --amp (fp16 scales dynamically by default)");
  if (choice.loss_scaling) check_loss_scaling_options(*choice.loss_scaling);
}

TrainingPrograms build_training_programs(const ModelChoice& choice) {
  check_model_choice(choice);
  const MlpConfig& c = choice.mlp;
  if (choice.kind == ModelKind::Mlp) return mlp_programs(c);
  if (choice.kind == ModelKind::ResNet) {
    const ResNetConfig& r = choice.resnet;
    return minimized(choice, build_resnet(r),
                     "ResNet-" + std::to_string(r.depth) + " width " + std::to_string(r.width) +
                         ", " + std::to_string(r.image_size) + "x" + std::to_string(r.image_size) +
                         " images, " + std::to_string(r.classes) + " classes");
  }
  const BertConfig& b = choice.bert;
  return minimized(choice, build_bert(b),
                   "BERT " + std::to_string(b.layers) + " layers, hidden " +
                       std::to_string(b.hidden) + ", " + std::to_string(b.heads) +
                       (b.attention == BertAttention::Flash ? " heads (flash_attn)" : " heads") +
                       ", sequence " + std::to_string(b.seq_len) + ", vocab " +
                       std::to_string(b.vocab) + ", token classification into " +
                       std::to_string(b.classes));
}

}  // namespace ctp::samples
