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
//
// Ops that read a var only for its dtype and shape (input slots their schema
// declares shape_only, ops/schema/op_def.h: elementwise_add_grad's X and Y)
// do not need its elements: those are freed after the last op that reads
// them or writes the var, and the tensor keeps its dtype and shape (without
// elements, Tensor::release_elements) until the last op naming it.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "program_ir/program.h"

namespace ctp {

// Where one var of a block is used, as op indices.
struct VarUses {
  std::size_t first = 0;                 // the first op naming it
  std::optional<std::size_t> first_write;  // the first op writing it, if any
  std::size_t last = 0;                  // the last op naming it
  // The last op that reads its elements (an input slot not shape-only) or
  // writes it, if any: after it only its dtype and shape are read.
  std::optional<std::size_t> last_element_use;
  bool read_before_written = false;  // an op reads it before any op writes it
};

struct BlockVarUses {
  std::unordered_map<std::string, VarUses> by_name;
  std::vector<std::string> order;  // first-use order
};

// Every var the block's ops name, with its uses (shape-only slots from the
// ops' schemas in OpRegistry::global()).
BlockVarUses block_var_uses(const Block& block);

struct VarReleasePlan {
  // after_op[i]: the vars to free once op i has run, in first-use order.
  std::vector<std::vector<std::string>> after_op;
  // elements_after_op[i]: the vars whose elements to free once op i has run
  // (their dtype and shape stay for the shape-only readers after it).
  std::vector<std::vector<std::string>> elements_after_op;
  std::size_t released_count() const;
};

VarReleasePlan plan_var_release(const Program& program, int32_t block_idx,
                                const std::unordered_set<std::string>& keep);

}  // namespace ctp
