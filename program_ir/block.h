// A block of a program: its vars (ordered, found by name in O(1)) and its
// ops (a linked list, so inserting or erasing at a handle is O(1) and every
// other handle stays valid; a rewrite over a whole block is linear).
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "program_ir/op.h"
#include "program_ir/unknown_fields.h"
#include "program_ir/var.h"
#include "program_ir/var_index.h"

namespace ctp {

class Block {
 public:
  using OpList = std::list<Op>;
  using OpHandle = OpList::iterator;
  using ConstOpHandle = OpList::const_iterator;

  int32_t idx = 0;
  int32_t parent_idx = -1;
  int32_t forward_block_idx = -1;
  // The file wrote forward_block_idx although it is -1 (proto2 presence).
  bool forward_block_idx_explicit = false;
  UnknownFields unknown_fields;

  Block() = default;
  Block(int32_t index, int32_t parent) : idx(index), parent_idx(parent) {}
  Block(const Block& other);
  Block& operator=(const Block& other);
  Block(Block&&) noexcept = default;
  Block& operator=(Block&&) noexcept = default;

  // --- vars, in declaration order ---
  // Adds a var; throws ctp::Error if the block already declares the name.
  Var& add_var(Var var);
  // Returns the existing var of that name, or adds `var` (Paddle's create_var).
  Var& get_or_add_var(Var var) { return emplace_var(std::move(var)).first; }
  // Adds `var` unless the name is declared: the var of that name, and
  // whether it was added (one lookup, as map::try_emplace).
  std::pair<Var&, bool> emplace_var(Var var);
  // Moves the vars of `nodes` (their list nodes: no var is copied) to the
  // end of the block in order, until one's name is declared already: whether
  // all were added (if not, `nodes` starts with the var refused).
  bool splice_vars(std::list<Var>& nodes);
  // Room for `count` vars in the name index, when a reader knows how many.
  void reserve_vars(std::size_t count) { var_index_.reserve(count); }
  Var* find_var(std::string_view name);
  const Var* find_var(std::string_view name) const;
  // Throws ctp::Error naming the block and the var when it is missing.
  Var& var(std::string_view name);
  const Var& var(std::string_view name) const;
  bool has_var(std::string_view name) const { return find_var(name) != nullptr; }
  bool remove_var(std::string_view name);
  std::size_t var_count() const { return vars_.size(); }
  // Iteration in declaration order: for (const Var& v : block.vars()).
  const std::list<Var>& vars() const { return vars_; }
  std::list<Var>& mutable_vars() { return vars_; }  // do not rename or add through this

  // --- ops ---
  OpList& ops() { return ops_; }
  const OpList& ops() const { return ops_; }
  std::size_t op_count() const { return ops_.size(); }
  OpHandle append_op(Op op) { return ops_.insert(ops_.end(), std::move(op)); }
  OpHandle insert_op(OpHandle before, Op op) { return ops_.insert(before, std::move(op)); }
  OpHandle insert_op_after(OpHandle after, Op op) {
    return ops_.insert(std::next(after), std::move(op));
  }
  // Returns the handle of the op that followed the erased one.
  OpHandle erase_op(OpHandle op) { return ops_.erase(op); }

  bool operator==(const Block& other) const;

 private:
  void rebuild_index();

  std::list<Var> vars_;
  // Keyed by the names in vars_: a list node never moves, and no var is
  // renamed in place, so each entry's name lives as long as the entry.
  VarIndex var_index_;
  OpList ops_;
};

}  // namespace ctp
