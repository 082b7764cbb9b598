// Which ops of a block the backward pass differentiates, and which vars get
// no gradient: Paddle's _find_op_path_ and _find_no_grad_vars (backward.py),
// plus ctp's check that no op on a path from a parameter to the loss lacks a
// grad maker (Paddle would silently stop the gradient there).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "program_ir/block.h"

namespace ctp {

struct BackwardPath {
  // The ops to differentiate, in block order (handles into the block).
  std::vector<Block::ConstOpHandle> ops;
  // Their positions in the block, for errors.
  std::vector<std::size_t> positions;
  // Vars that get no gradient: stop_gradient ones, those the caller names,
  // and outputs of path ops that do not lead to the loss.
  std::unordered_set<std::string> no_grad_vars;
};

// `loss` is declared in `block`; `no_grad_vars` holds the vars that must get
// no gradient (stop_gradient and the caller's); `parameters` the trainable
// parameters, used only to name the parameter in the error for an op without
// a grad maker on its way to the loss. Throws ctp::Error naming the op for
// such an op, and for one with a sub-block on the path (control flow is not
// differentiated yet).
BackwardPath find_backward_path(const Block& block, const std::string& loss,
                                std::unordered_set<std::string> no_grad_vars,
                                const std::vector<std::string>& parameters,
                                std::string_view pass);

}  // namespace ctp
