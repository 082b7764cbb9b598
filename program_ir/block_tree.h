// Visiting a program's blocks parents before children, so that "is this
// name declared in the block or an ancestor" costs one lookup in a table of
// the names visible on the current path, whatever the nesting depth. (Walking
// up from every block costs time, and listing every block's ancestors
// memory, quadratic in the depth: a 100,000-block chain is a 600 KB file.)
#pragma once
#include <cstddef>
#include <functional>
#include <vector>

#include "program_ir/program.h"

namespace ctp {

// A block whose parent_idx names no block (or itself) is a root. Blocks whose
// parent_idx chain loops are visited as one node: each sees the vars of all of
// them, as a walk up from any of them would. `enter` gets a node's blocks
// (one, or a loop's, by index) before its descendants', `leave` after them.
// Iterative: any depth is fine.
using BlockGroup = std::vector<std::size_t>;
void walk_block_tree(const Program& program, const std::function<void(const BlockGroup&)>& enter,
                     const std::function<void(const BlockGroup&)>& leave);

}  // namespace ctp
