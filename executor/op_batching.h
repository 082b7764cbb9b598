// Which ops of a block may run as one batch: a kernel launch per op costs a
// GPU a few microseconds even when the op moves a few kilobytes, and a
// mixed-precision step has one cast and one update per parameter (hundreds;
// bench/RESULTS.md, seventh round). Consecutive ops of one type whose work
// is independent can go to the type's batch kernel together, which launches
// once for all of them, as PyTorch's _foreach optimizers do.
#pragma once
#include <cstddef>
#include <functional>
#include <vector>

#include "program_ir/block.h"

namespace ctp {

struct OpRun {
  std::size_t first = 0;  // op index in the block
  std::size_t count = 0;  // at least 2
};

// The maximal runs of at least two consecutive ops of one type for which
// `batchable` holds and where no op reads or writes a var that an earlier op
// of the run writes, nor writes a var that an earlier op of the run reads
// (an op reading and writing its own var, as sgd's Param and ParamOut,
// stays batchable). In block order; an op starts a new run where joining
// would break that. Linear in the ops' arguments.
std::vector<OpRun> independent_op_runs(const Block& block,
                                       const std::function<bool(const Op&)>& batchable);

}  // namespace ctp
