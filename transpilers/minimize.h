// Paddle's Optimizer.minimize(loss) on a forward program, with the static
// AMP decorator's steps when mixed precision is asked for: the AMP rewrite
// of the forward (transpilers/amp_rewrite.h), the loss scaled
// (transpilers/loss_scaling.h, when AmpOptions::loss_scaling is set), the
// backward of that loss (append_backward.h), one update op per parameter
// (append_optimizer.h), and the gradients unscaled and checked before the
// updates. What `ctp minimize` and the sample trainer run.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "program_ir/program.h"
#include "transpilers/amp_rewrite.h"
#include "transpilers/append_backward.h"
#include "transpilers/append_optimizer.h"
#include "transpilers/loss_scaling.h"

namespace ctp {

struct MinimizeOptions {
  std::string loss;
  std::vector<std::string> no_grad_vars;
  OptimizerOptions optimizer;
  std::optional<AmpOptions> amp;
};

struct MinimizeResult {
  BackwardResult backward;
  AmpResult amp;                                // zeros without AMP
  std::optional<LossScalingVars> loss_scaling;  // set with AMP loss scaling
};

// Throws ctp::Error from the step that fails; the programs are unchanged then.
MinimizeResult minimize(Program& startup, Program& main, const MinimizeOptions& options);

}  // namespace ctp
