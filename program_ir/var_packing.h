// Vars a rewrite adds, held as compactly as the vars it read.
#pragma once
#include <span>
#include <string>
#include <vector>

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

// add_packed_var for vars like `var` but each named one of `names` (var's
// own name is not used), the VarDesc encoded once: a rewrite that adds a
// var per rank per parameter (MultiThread all_gather's pieces, four times
// a large program's own vars) would otherwise encode each whole. Returns
// the positions in `names` of those the block declares already, which it
// does not add.
std::vector<std::size_t> add_packed_vars(Block& block, Var var,
                                         std::span<const std::string> names);

}  // namespace ctp
