// Which of a block's intermediate vars die after which op, so the executor
// can free each one's tensor once nothing later in the step reads it (as
// Paddle's eager deletion, its garbage collector of a block's vars). Worked
// out once per program from the op order; the step then frees by index.
//
// A var is released after the last op of the block that names it (as input
// or output) unless it must outlive the step or its buffer must stay put:
//   - persistable vars and feed/fetch holders (the model's state),
//   - vars some op reads before any op writes them (the caller sets them
//     before a step: they may be bound once for many steps),
//   - vars named by any other block of the program (sub-blocks read their
//     parent's vars; a parent reads what a sub-block left),
//   - vars of communicating ops (a collective may still read or write them
//     on its own stream after the op returns) and of coalesce_tensor (its
//     outputs are views into one fused buffer that kernels write in place
//     every step; a freed view would be reallocated elsewhere),
//   - names the caller keeps (fetch targets, vars read after the step).
#pragma once
#include <cstddef>
#include <string>
#include <unordered_set>
#include <vector>

#include "program_ir/program.h"

namespace ctp {

struct VarReleasePlan {
  // after_op[i]: the vars to free once op i has run, in first-use order.
  std::vector<std::vector<std::string>> after_op;
  std::size_t released_count() const;
};

VarReleasePlan plan_var_release(const Program& program, int32_t block_idx,
                                const std::unordered_set<std::string>& keep);

}  // namespace ctp
