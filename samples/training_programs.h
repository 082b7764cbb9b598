// The programs the sample trainer trains, for each model it knows: the MLP
// (samples/mlp_model.h, backward and optimizer written by hand, with AMP),
// and the real models of samples/real_models.h (ResNet, BERT), whose forward
// programs get their mixed precision (--amp, with loss scaling for fp16),
// backward and optimizer from the passes `ctp minimize` runs
// (transpilers/minimize.h), as Paddle's static AMP decorator and
// Optimizer.minimize(loss) give them.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "program_ir/program.h"
#include "samples/mlp_model.h"
#include "samples/real_models.h"
#include "transpilers/loss_scaling.h"

namespace ctp::samples {

enum class ModelKind { Mlp, ResNet, Bert };
// "mlp", "resnet" or "bert"; throws ctp::Error for anything else.
ModelKind model_kind_from_string(const std::string& name);
std::string to_string(ModelKind kind);

struct ModelChoice {
  ModelKind kind = ModelKind::Mlp;
  // The MLP's shape, and for every model the optimizer and its settings
  // (optimizer, learning_rate, momentum, nesterov, beta1, beta2, epsilon)
  // and the precision (dtype, amp, loss_scale).
  MlpConfig mlp;
  ResNetConfig resnet;
  BertConfig bert;
  // The real models' loss scaling under --amp (the MLP has its static
  // loss_scale): unset, none.
  std::optional<LossScalingOptions> loss_scaling;
};

struct TrainingPrograms {
  Program startup;
  Program main;                 // forward, backward, optimizer
  std::optional<Program> eval;  // the forward alone (the MLP's, for accuracy)
  std::vector<std::string> inputs;  // feed vars in order, the label last
  std::string loss;                 // [1]
  std::string probabilities;        // eval's softmax (with eval only)
  std::vector<std::string> parameters;  // trainable, in creation order
  std::string description;  // one line: the model, its optimizer and precision
  std::string loss_scaling;  // the loss-scaling var (loss_scaling_0), when there is one
};

// Throws ctp::Error for a precision the model cannot train in: the real
// models are FP32 (their --amp is the AMP rewrite pass's; loss scaling is
// theirs, the MLP's static loss_scale is the MLP's own).
void check_model_choice(const ModelChoice& choice);

// Throws ctp::Error as check_model_choice does, and for a configuration the
// model cannot be built with.
TrainingPrograms build_training_programs(const ModelChoice& choice);

}  // namespace ctp::samples
