// Vars a rewrite adds, held as compactly as the vars it read.
#pragma once
#include "program_ir/block.h"

namespace ctp {

// Adds `var` to `block` unless the block declares its name; returns whether
// it added it. When the block holds the vars it was read with as their
// bytes (wire_vars.h), the new var joins them as its encoded VarDesc,
// decoded only when asked for and written back as those bytes; otherwise it
// is added as it is (Block::emplace_var). Either way it reads back equal to
// `var` and is written as the writer writes `var`.
//
// Why: a rewrite of a large program adds a var or more per parameter
// (multi_thread's all_gather one per parameter and rank). A Var in memory
// costs ~300 bytes in four allocations; held as bytes, ~80.
bool add_packed_var(Block& block, const Var& var);

}  // namespace ctp
