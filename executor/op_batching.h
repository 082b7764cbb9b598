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
  std::size_t first = 0;  // op index in the block (in an order: a position in it)
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
// The same over the block's ops taken in `order` (op indices, each once):
// the runs' `first` are positions in `order`.
std::vector<OpRun> independent_op_runs(const Block& block, const std::vector<std::size_t>& order,
                                       const std::function<bool(const Op&)>& batchable);

// An order to run the block's ops in that gathers the ops for which `gather`
// holds (AMP's casts: a mixed-precision step casts every parameter before
// its use and every parameter's gradient after it is made, hundreds of
// launches between the GEMMs) into runs that the batching above can take:
// - a gathered op that shares no var with any earlier op (and follows no
//   `barrier` op) moves to the front: the forward's casts of parameters;
// - every other gathered op waits until the first later op that shares a
//   var with it, or a barrier, or the block's end, and runs just before it
//   with the others waiting then: the backward's casts of parameter
//   gradients meet before the optimizer reads the first of them.
// Every var's accesses (reads too, so that the frees after a var's last use
// stay right) keep their order, so the step computes the same values; a
// barrier (a collective, an op running another block) is never crossed.
// Op indices in the order to run them; the block's order when nothing moves.
std::vector<std::size_t> gathering_order(const Block& block,
                                         const std::function<bool(const Op&)>& gather,
                                         const std::function<bool(const Op&)>& barrier);

}  // namespace ctp
