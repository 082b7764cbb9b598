#include "samples/training_programs.h"

#include <sstream>

#include "program_ir/error.h"
#include "transpilers/append_backward.h"
#include "transpilers/append_optimizer.h"
#include "transpilers/amp_rewrite.h"

namespace ctp::samples {
namespace {

std::string precision_note(const ModelKind kind, const MlpConfig& model) {
  std::string note = ", " + std::string(to_string(model.dtype));
  // The MLP builds its own AMP program, with 16-bit gradients; the real
  // models get the AMP pass, whose parameter gradients stay FP32.
  if (model.amp)
    note += " parameters, " + std::string(to_string(*model.amp)) +
            (kind == ModelKind::Mlp ? " compute and gradients"
                                    : " compute where the AMP rewrite's lists say (FP32 gradients)");
  if (model.loss_scale != 1.0f) {
    std::ostringstream scale;
    scale << model.loss_scale;
    note += ", loss scale " + scale.str();
  }
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
TrainingPrograms minimized(ModelKind kind, ModelPrograms model, const MlpConfig& c,
                           std::string description) {
  TrainingPrograms p;
  p.startup = std::move(model.startup);
  p.main = std::move(model.main);
  if (c.amp) AmpRewritePass(AmpOptions{.dtype = *c.amp}).run(p.main);
  append_backward(p.main, BackwardOptions{.loss = model.loss, .no_grad_vars = {}});
  AppendOptimizerPass(optimizer_options(c)).run(p.startup, p.main);
  p.inputs = model.inputs;
  p.inputs.push_back(model.label);
  p.loss = model.loss;
  p.parameters = std::move(model.parameters);
  p.description = std::move(description) + ", " + optimizer_note(kind, c);
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
  if (choice.kind == ModelKind::Mlp) return;
  const std::string model = "--model " + to_string(choice.kind);
  // The real models are built in FP32; --amp rewrites them with the AMP
  // pass (transpilers/amp_rewrite.h), which has no loss scaling: FP16's
  // small gradients would underflow, BF16 has FP32's exponent range.
  if (c.dtype != DataType::FP32)
    throw Error(model + " trains in fp32 only, not " + std::string(to_string(c.dtype)));
  if (c.amp && *c.amp != DataType::BF16)
    throw Error("--amp " + std::string(to_string(*c.amp)) + " is not available for " + model +
                ": the AMP rewrite has no loss scaling, which FP16 gradients need; use --amp bf16");
  if (c.loss_scale != 1.0f)
    throw Error("--loss-scale is the MLP's: the AMP rewrite of " + model +
                " has no loss scaling");
}

TrainingPrograms build_training_programs(const ModelChoice& choice) {
  check_model_choice(choice);
  const MlpConfig& c = choice.mlp;
  if (choice.kind == ModelKind::Mlp) return mlp_programs(c);
  if (choice.kind == ModelKind::ResNet) {
    const ResNetConfig& r = choice.resnet;
    return minimized(choice.kind, build_resnet(r), c,
                     "ResNet-" + std::to_string(r.depth) + " width " + std::to_string(r.width) +
                         ", " + std::to_string(r.image_size) + "x" + std::to_string(r.image_size) +
                         " images, " + std::to_string(r.classes) + " classes");
  }
  const BertConfig& b = choice.bert;
  return minimized(choice.kind, build_bert(b), c,
                   "BERT " + std::to_string(b.layers) + " layers, hidden " +
                       std::to_string(b.hidden) + ", " + std::to_string(b.heads) +
                       " heads, sequence " + std::to_string(b.seq_len) + ", vocab " +
                       std::to_string(b.vocab) + ", token classification into " +
                       std::to_string(b.classes));
}

}  // namespace ctp::samples
