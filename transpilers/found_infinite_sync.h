// Agreeing on a loss-scaling overflow across workers
// (transpilers/loss_scaling.h). Where each worker checks its own gradients
// (local_sgd, which never reduces them), one worker may find an Inf the
// others do not: it would skip its step and lower its scale alone, and the
// workers' scales and parameters would drift apart. After each
// check_finite_and_unscale this inserts what Paddle's hybrid-parallel AMP
// does for its found-inf flag: cast to INT32, c_allreduce_max on ring 0 (a
// BOOL cannot be reduced), cast back, so every worker sees "some worker
// overflowed" and all skip and rescale together.
#pragma once
#include <string_view>
#include <vector>

#include "program_ir/block.h"

namespace ctp {

// `checks`: the block's check_finite_and_unscale ops, in block order (a
// rewrite that walks every op anyway collects them, which spares a walk of
// the whole block here). Returns how many flags it synchronised (0: the
// program has no loss scaling).
int insert_found_infinite_allreduce(Block& block, const std::vector<Block::OpHandle>& checks,
                                    std::string_view pass);

}  // namespace ctp
