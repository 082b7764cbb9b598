#include "program_ir/block.h"

#include <algorithm>

namespace ctp {

Block::Block(const Block& other)
    : idx(other.idx), parent_idx(other.parent_idx),
      forward_block_idx(other.forward_block_idx),
      forward_block_idx_explicit(other.forward_block_idx_explicit),
      unknown_fields(other.unknown_fields), vars_(other.vars_), ops_(other.ops_) {
  rebuild_index();
}

Block& Block::operator=(const Block& other) {
  if (this != &other) {
    Block copy(other);
    *this = std::move(copy);
  }
  return *this;
}

void Block::rebuild_index() {
  var_index_.clear();
  var_index_.reserve(vars_.size());
  for (auto it = vars_.begin(); it != vars_.end(); ++it) var_index_.try_emplace(it);
}

Var& Block::add_var(Var var) {
  auto [added, is_new] = emplace_var(std::move(var));
  if (!is_new)
    throw Error(SourceLocation{.block = idx, .var_name = added.name}, "is declared twice");
  return added;
}

std::pair<Var&, bool> Block::emplace_var(Var var) {
  // The var goes into the list first, so that the index's key can view its
  // name there; it comes out again when the name is taken.
  auto node = vars_.insert(vars_.end(), std::move(var));
  auto [indexed, is_new] = var_index_.try_emplace(node);
  if (!is_new) vars_.erase(node);
  return {*indexed, is_new};
}

bool Block::splice_vars(std::list<Var>& nodes) {
  while (!nodes.empty()) {
    const auto node = nodes.begin();
    vars_.splice(vars_.end(), nodes, node);
    if (!var_index_.try_emplace(node).second) {
      nodes.splice(nodes.begin(), vars_, node);
      return false;
    }
  }
  return true;
}

Var* Block::find_var(std::string_view name) {
  const VarIndex::Node* node = var_index_.find(name);
  return node ? &**node : nullptr;
}

const Var* Block::find_var(std::string_view name) const {
  const VarIndex::Node* node = var_index_.find(name);
  return node ? &**node : nullptr;
}

Var& Block::var(std::string_view name) {
  if (Var* v = find_var(name)) return *v;
  throw Error(SourceLocation{.block = idx, .var_name = std::string(name)}, "is not declared");
}

const Var& Block::var(std::string_view name) const {
  return const_cast<Block*>(this)->var(name);
}

bool Block::remove_var(std::string_view name) {
  const std::optional<VarIndex::Node> node = var_index_.erase(name);
  if (!node) return false;
  vars_.erase(*node);
  return true;
}

bool Block::operator==(const Block& other) const {
  return idx == other.idx && parent_idx == other.parent_idx &&
         forward_block_idx == other.forward_block_idx &&
         forward_block_idx_explicit == other.forward_block_idx_explicit &&
         unknown_fields == other.unknown_fields && vars_ == other.vars_ &&
         ops_ == other.ops_;
}

}  // namespace ctp
