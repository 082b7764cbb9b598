// The optimizer pass: Paddle's Optimizer.apply_gradients on a program with a
// backward (append_backward.h). For every [param, grad] pair that the
// backward ops' op_role_var name, sorted by parameter name as Paddle sorts
// params_grads, it appends one update op (sgd, momentum, adam, adamw, lamb or
// rmsprop) with role Optimize and op_role_var [param, grad]; it declares the
// learning rate (learning_rate_0) and the optimizer's state per parameter
// (<param>_moment1_0, <param>_beta1_pow_acc_0, <param>_velocity_0, ...)
// persistable in main and startup, and initialises them with fill_constant
// in startup, with Paddle's names, shapes and starting values.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "program_ir/program.h"

namespace ctp {

enum class OptimizerType { kSgd, kMomentum, kAdam, kAdamW, kLamb, kRmsprop };
std::string_view to_string(OptimizerType type);
// "sgd", "momentum", "adam", "adamw", "lamb", "rmsprop"; nullopt otherwise.
std::optional<OptimizerType> optimizer_type_from_string(std::string_view name);
// The names above, comma-separated, for help and errors.
std::string optimizer_type_names();

// Paddle's defaults (paddle.optimizer.*) where a field is unset.
struct OptimizerOptions {
  OptimizerType type = OptimizerType::kSgd;
  float learning_rate = 0.001f;
  std::optional<float> momentum;  // momentum's mu (0.9), rmsprop's momentum (0)
  bool use_nesterov = false;      // momentum
  float beta1 = 0.9f, beta2 = 0.999f;  // adam, adamw, lamb
  std::optional<float> epsilon;   // adam/adamw 1e-8, lamb 1e-6, rmsprop 1e-6
  std::optional<float> weight_decay;  // adamw's coeff (0.01), lamb's weight_decay (0.01)
  float rho = 0.95f;              // rmsprop's decay
  bool centered = false;          // rmsprop
};

// Throws ctp::Error when the main program has no backward op with
// op_role_var, already has update ops, or an option is out of range (a
// learning rate that is not positive and finite, a beta outside [0, 1)).
void append_optimizer(Program& startup, Program& main, const OptimizerOptions& options);

class AppendOptimizerPass final {
 public:
  explicit AppendOptimizerPass(OptimizerOptions options) : options_(options) {}
  std::string_view name() const { return "append_optimizer"; }
  void run(Program& startup, Program& main) const { append_optimizer(startup, main, options_); }

 private:
  OptimizerOptions options_;
};

}  // namespace ctp
