#include "transpilers/minimize.h"

#include <utility>

namespace ctp {

MinimizeResult minimize(Program& startup, Program& main, const MinimizeOptions& options) {
  // The steps work on copies, so that a failure halfway leaves the programs as they were.
  Program new_startup = startup;
  Program new_main = main;
  MinimizeResult result;
  std::string loss = options.loss;
  const LossScalingOptions* scaling =
      options.amp && options.amp->loss_scaling ? &*options.amp->loss_scaling : nullptr;
  if (options.amp) result.amp = amp_rewrite(new_main, *options.amp);
  if (scaling) {
    result.loss_scaling = scale_loss(new_startup, new_main, loss, *scaling);
    loss = result.loss_scaling->scaled_loss;
  }
  result.backward = append_backward(
      new_main, BackwardOptions{.loss = loss, .no_grad_vars = options.no_grad_vars});
  append_optimizer(new_startup, new_main, options.optimizer);
  if (scaling) unscale_gradients(new_main, *result.loss_scaling, *scaling);
  startup = std::move(new_startup);
  main = std::move(new_main);
  return result;
}

}  // namespace ctp
