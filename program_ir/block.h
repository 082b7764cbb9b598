// A block of a program: its vars (ordered, found by name in O(1)) and its
// ops (a linked list, so inserting or erasing at a handle is O(1) and every
// other handle stays valid; a rewrite over a whole block is linear).
//
// A block read from protobuf with an owner of the input holds its vars as
// their VarDesc bytes (wire_vars.h): find_var decodes the one asked for,
// for_each_var walks them without decoding, the writer copies the bytes of
// those never decoded, and vars() decodes them all, once. Const calls are
// safe beside each other, as for an op's attributes.
#pragma once
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "program_ir/op.h"
#include "program_ir/op_packing.h"
#include "program_ir/unknown_fields.h"
#include "program_ir/var.h"
#include "program_ir/var_index.h"
#include "program_ir/wire_vars.h"

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

  Block();
  Block(int32_t index, int32_t parent);
  Block(const Block& other);
  Block& operator=(const Block& other);
  Block(Block&&) noexcept;
  Block& operator=(Block&&) noexcept;
  ~Block();

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
  // Room for `count` vars in all, when a reader or a rewrite knows how many
  // the block will hold: adding up to that many then grows no index.
  void reserve_vars(std::size_t count);
  Var* find_var(std::string_view name);
  const Var* find_var(std::string_view name) const;
  // Throws ctp::Error naming the block and the var when it is missing.
  Var& var(std::string_view name);
  const Var& var(std::string_view name) const;
  bool has_var(std::string_view name) const { return find_var_entry(name).has_value(); }
  // A copy of the var named `name` (nullopt when it is not declared), decoded
  // from its bytes when it is still bytes, which it stays: for a rewrite that
  // reads a field or two of each parameter (its shape), which find_var would
  // leave decoded, a Var per parameter for good.
  std::optional<Var> copy_var(std::string_view name) const;
  bool remove_var(std::string_view name);
  std::size_t var_count() const;
  // Iteration in declaration order: for (const Var& v : block.vars()).
  // Decodes the vars still held as bytes (all of them, once).
  const std::list<Var>& vars() const;
  std::list<Var>& mutable_vars();  // do not rename or add through this

  // A var as for_each_var and find_var_entry show it: decoded, or still
  // the VarDesc bytes it was read from, with what a rewrite asks of most
  // vars it looks up (a name that exists, whether it is distributed) and a
  // whole-block walk of every var. Valid while the var is declared.
  struct VarEntry {
    std::string_view name;
    const Var* var;          // nullptr while the var is still bytes
    std::string_view bytes;  // its VarDesc fields, while var is nullptr
    bool persistable;
    bool is_parameter;
    bool is_distributed;
    static VarEntry of(const Var& var) {
      return {var.name, &var, {}, var.persistable, var.is_parameter, var.is_distributed};
    }
  };
  // Every var in declaration order, decoding none. `visit` must not call
  // the block (it may hold the block's lock).
  void for_each_var(const std::function<void(const VarEntry&)>& visit) const;
  // The var named `name`, decoding nothing; nullopt when it is not declared.
  std::optional<VarEntry> find_var_entry(std::string_view name) const;
  // For the protobuf reader, on a block without vars: `vars` become the
  // block's vars (their names already indexed, none twice).
  void adopt_wire_vars(std::unique_ptr<WireVars> vars);
  // Adds a var given as its VarDesc fields (`name` within them) and what
  // the reader would note of it, held as those bytes beside the vars read
  // from a file, when the block holds such vars (a block read from a file
  // whose whole var list nothing asked for) and does not declare the name.
  // For add_packed_var (var_packing.h).
  enum class WireVarAdded { kAdded, kDeclared, kNotHeldAsBytes };
  WireVarAdded emplace_wire_var(std::string_view bytes, std::string_view name,
                                WireVarFlags flags);

  // --- ops ---
  // Every op in order, copies held as one included (they become ops of the
  // list first: see insert_op_copies). Const calls are safe beside each
  // other.
  OpList& ops() {
    release_held_copies();
    return ops_;
  }
  const OpList& ops() const {
    release_held_copies();
    return ops_;
  }
  std::size_t op_count() const { return ops_.size() + held_op_count(); }
  OpHandle append_op(Op op) { return ops_.insert(ops_.end(), std::move(op)); }
  OpHandle insert_op(OpHandle before, Op op) { return ops_.insert(before, std::move(op)); }
  OpHandle insert_op_after(OpHandle after, Op op) {
    if (after->heads_held_copies_) release_held_copies();
    return ops_.insert(std::next(after), std::move(op));
  }
  // Returns the handle of the op that followed the erased one.
  OpHandle erase_op(OpHandle op) {
    if (op->heads_held_copies_) release_held_copies();
    return ops_.erase(op);
  }

  // --- copies of one op held as one ---
  // Inserts `copies` before `before`: the first as an op of the list, which
  // it returns (`before` when there are none), the others held after it as
  // one, without an Op each, until something asks for the block's ops
  // (ops(), or an edit beside the first), which inserts them after it in
  // order. The writer writes them as they are held. Copies that share no
  // bytes (OpCopies::shares_bytes) all go into the list. Why: MultiThread
  // all_gather makes 18 copies of each adam op, and as ops of their own
  // their list nodes alone were a third of a 1M-op transpile's memory.
  OpHandle insert_op_copies(OpHandle before, OpCopies copies);
  // The list as it is, the copies held after an op left out: for the
  // writer, which writes those from copies_held_after, and for a walk from
  // the last op to the first that adds held copies only after where it is
  // (op_walk.h). Do not edit through this.
  OpList& ops_holding_copies() { return ops_; }
  const OpList& ops_holding_copies() const { return ops_; }
  // The copies held after `op` (an op of this block's list that
  // heads_held_copies()): copies 1 and up of its OpCopies; nullptr if none.
  const OpCopies* copies_held_after(const Op& op) const;

  bool operator==(const Block& other) const;

 private:
  void rebuild_index() const;
  // Whether vars are still held as bytes; then const calls hold
  // wire_vars_->mutex().
  bool has_wire_vars() const { return wire_vars_ && wire_vars_->active(); }
  // Decodes the vars still held as bytes into vars_, in order (the caller
  // holds the mutex).
  void decode_all_vars() const;
  // Holds wire_vars_->mutex() while vars are still bytes (empty otherwise).
  std::unique_lock<std::mutex> lock_wire_vars() const;
  // The record of the var named `name` still held as bytes, or npos.
  std::size_t wire_var_index(std::string_view name) const {
    return has_wire_vars() ? wire_vars_->find(name) : WireVars::npos;
  }
  // find_var, for a caller that runs alone or holds lock_wire_vars().
  Var* find_var_locked(std::string_view name) const;
  // Inserts every held copy after the op it follows (a const caller may
  // run beside others: it takes held_'s lock).
  void release_held_copies() const;
  std::size_t held_op_count() const;

  // The vars decoded (the last of them, in order, when wire_vars_ holds
  // others; mutable: a const call decodes them).
  mutable std::list<Var> vars_;
  // Keyed by the names in vars_: a list node never moves, and no var is
  // renamed in place, so each entry's name lives as long as the entry.
  mutable VarIndex var_index_;
  // The vars read as bytes and not yet all decoded; they come before vars_.
  std::unique_ptr<WireVars> wire_vars_;
  // mutable: a const ops() inserts the copies held.
  mutable OpList ops_;
  struct HeldCopies;  // block.cc
  std::unique_ptr<HeldCopies> held_;
};

}  // namespace ctp
