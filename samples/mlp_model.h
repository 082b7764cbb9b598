// A multi-layer perceptron classifier as static programs, built the way
// Paddle's fluid.layers.fc + softmax_with_cross_entropy + mean, then
// append_backward and Optimizer.minimize would build it:
//
//   startup: initializers of every parameter and optimizer state
//   main:    forward (loss op Forward|Loss), backward (loss-grad op
//            Backward|Loss, op_role_var [param, grad] on every op that
//            produces a parameter's gradient), optimizer ops (Optimize, with
//            op_role_var)
//   eval:    the forward ops only, for measuring accuracy
//
// With MlpConfig::amp it is the program Paddle's static AMP rewrite gives:
// parameters, optimizer state, softmax and loss stay in `dtype` (FP32); every
// layer computes in the 16-bit type on cast copies (<var>.cast_bf16) of its
// input and parameters, so the parameter gradients the backward produces, and
// the all-reduces the transpilers insert for them, are 16-bit (half the bytes
// on the wire). Optimize-role casts turn them into FP32 gradients, divided by
// the loss scale, after the communication has been waited for.
//
// Names follow Paddle's: fc_0.w_0, fc_0.b_0, fc_0.tmp_0, ..., mean_0.tmp_0,
// grads with @GRAD, learning_rate_0, <param>_velocity_0, <param>_moment1_0, ...
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "program_ir/program.h"

namespace ctp::samples {

enum class OptimizerKind { SGD, Momentum, Adam };
// "sgd", "momentum" or "adam"; throws ctp::Error for anything else.
OptimizerKind optimizer_from_string(const std::string& name);
std::string to_string(OptimizerKind kind);

struct MlpConfig {
  int64_t input_dim = 2;
  std::vector<int64_t> hidden = {32};  // widths of the relu layers
  int64_t classes = 3;
  DataType dtype = DataType::FP32;
  // Mixed precision: FP16 or BF16 (dtype must be FP32); unset: none.
  std::optional<DataType> amp;
  // The loss gradient starts at this value instead of 1 (static loss
  // scaling, so small FP16 gradients do not flush to zero); the optimizer
  // sees gradients divided by it again.
  float loss_scale = 1.0f;
  OptimizerKind optimizer = OptimizerKind::SGD;
  float learning_rate = 0.1f;
  float momentum = 0.9f;  // mu
  bool nesterov = false;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
  // The seed attribute of the weight initializers; 0 makes them follow the
  // run's seed (RunServices::seed), so ranks can initialise differently.
  int32_t init_seed = 0;
};

struct MlpPrograms {
  Program startup;
  Program main;
  Program eval;
  std::string input = "x";         // [-1, input_dim], dtype
  std::string label = "label";     // [-1, 1], INT64
  std::string loss;                // [1]: the mean cross entropy
  std::string probabilities;       // [-1, classes]: the softmax
  std::vector<std::string> parameters;  // in creation order
};

MlpPrograms build_mlp(const MlpConfig& config);

}  // namespace ctp::samples
