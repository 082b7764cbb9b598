// Two steps of the backward pass over its list of grad ops, before they are
// placed in the block (Paddle's backward.py does the same on OpDescs):
//  - a var whose gradient several grad ops write gets each partial gradient
//    under its own name, x@GRAD@RENAME@block<b>@<n>, and a `sum` into x@GRAD
//    before the first op that reads it (_addup_repetitive_outputs_, with
//    FLAGS_max_inplace_grad_add at its default 0: always `sum`);
//  - grad ops that write only gradients nobody may have, or read only such
//    gradients, are dropped, and a gradient read but never to be written
//    gets a fill_zeros_like (_remove_no_grad_branch_).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "program_ir/op.h"

namespace ctp {

// Renames the partial gradients in `grad_ops` and inserts the `sum` ops.
void add_up_repeated_grads(std::vector<Op>& grad_ops, int32_t block_idx);

// `no_grad_grads` holds grad var names (x@GRAD) that must not be written; it
// grows by the outputs of the ops dropped because their inputs are all in it.
void remove_no_grad_branches(std::vector<Op>& grad_ops,
                             std::unordered_set<std::string>& no_grad_grads);

// Renames `from` to `to` in every input and output slot of `op`.
void rename_arg(Op& op, const std::string& from, const std::string& to);

}  // namespace ctp
