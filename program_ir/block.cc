#include "program_ir/block.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>

#include "program_ir/error.h"

namespace ctp {

// The copies held after ops of the list (insert_op_copies), by the op they
// follow. `any` lets a const ops() see without the lock that none are held.
struct Block::HeldCopies {
  struct After {
    OpHandle head;
    OpCopies copies;
  };
  std::mutex mutex;
  std::atomic<bool> any{false};
  std::unordered_map<const Op*, After> by_head;
  std::size_t ops = 0;  // held, the heads not counted
};

Block::Block(const Block& other)
    : idx(other.idx), parent_idx(other.parent_idx),
      forward_block_idx(other.forward_block_idx),
      forward_block_idx_explicit(other.forward_block_idx_explicit),
      unknown_fields(other.unknown_fields), vars_(other.vars()), ops_(other.ops()) {
  rebuild_index();
}

Block::Block() = default;
Block::Block(int32_t index, int32_t parent) : idx(index), parent_idx(parent) {}
Block::Block(Block&&) noexcept = default;
Block& Block::operator=(Block&&) noexcept = default;
Block::~Block() = default;

Block::OpHandle Block::insert_op_copies(OpHandle before, OpCopies copies) {
  if (copies.size() == 0) return before;
  const OpHandle head = ops_.insert(before, copies.op(0));
  // Copies that share no bytes are ops of their own already: the writer
  // writes held copies from their shared bytes.
  if (!copies.shares_bytes()) {
    for (std::size_t i = 1; i < copies.size(); ++i) ops_.insert(before, copies.op(i));
    return head;
  }
  if (copies.size() == 1) return head;
  if (!held_) held_ = std::make_unique<HeldCopies>();
  held_->ops += copies.size() - 1;
  head->heads_held_copies_ = true;
  held_->by_head.emplace(&*head, HeldCopies::After{head, std::move(copies)});
  held_->any.store(true, std::memory_order_release);
  return head;
}

const OpCopies* Block::copies_held_after(const Op& op) const {
  if (!op.heads_held_copies_ || !held_) return nullptr;
  const auto found = held_->by_head.find(&op);
  return found == held_->by_head.end() ? nullptr : &found->second.copies;
}

std::size_t Block::held_op_count() const {
  if (!held_ || !held_->any.load(std::memory_order_acquire)) return 0;
  const std::lock_guard<std::mutex> lock(held_->mutex);
  return held_->ops;
}

void Block::release_held_copies() const {
  if (!held_ || !held_->any.load(std::memory_order_acquire)) return;
  const std::lock_guard<std::mutex> lock(held_->mutex);
  if (!held_->any.load(std::memory_order_relaxed)) return;  // another caller did
  for (auto& [op, after] : held_->by_head) {
    const OpHandle next = std::next(after.head);
    for (std::size_t i = 1; i < after.copies.size(); ++i) ops_.insert(next, after.copies.op(i));
    after.head->heads_held_copies_ = false;
  }
  held_->by_head.clear();
  held_->ops = 0;
  held_->any.store(false, std::memory_order_release);
}

Block& Block::operator=(const Block& other) {
  if (this != &other) {
    Block copy(other);
    *this = std::move(copy);
  }
  return *this;
}

void Block::reserve_vars(std::size_t count) {
  // Vars added to a block holding vars as bytes are held so too
  // (emplace_wire_var), or decoded beside them in vars_.
  if (has_wire_vars()) wire_vars_->reserve(count);
  else var_index_.reserve(count);
}

void Block::rebuild_index() const {
  var_index_.clear();
  var_index_.reserve(vars_.size());
  for (auto it = vars_.begin(); it != vars_.end(); ++it) var_index_.try_emplace(it);
}

void Block::decode_all_vars() const {
  if (!has_wire_vars()) return;  // another caller decoded them meanwhile
  std::list<Var> all = wire_vars_->take_all();
  all.splice(all.end(), vars_);
  vars_.swap(all);
  rebuild_index();
  wire_vars_->retire();
}

std::unique_lock<std::mutex> Block::lock_wire_vars() const {
  if (!has_wire_vars()) return {};
  return std::unique_lock(wire_vars_->mutex());
}

const std::list<Var>& Block::vars() const {
  if (has_wire_vars()) {
    const auto lock = lock_wire_vars();
    decode_all_vars();
  }
  return vars_;
}

std::list<Var>& Block::mutable_vars() {
  vars();
  wire_vars_.reset();
  return vars_;
}

std::size_t Block::var_count() const {
  const auto lock = lock_wire_vars();
  return (has_wire_vars() ? wire_vars_->live_count() : 0) + vars_.size();
}

namespace {

Block::VarEntry entry_of(const WireVars& wire, std::size_t i) {
  if (const Var* var = wire.decoded(i)) return Block::VarEntry::of(*var);
  const WireVarFlags flags = wire.flags(i);
  return {wire.name(i), nullptr, wire.bytes(i), flags.persistable, flags.is_parameter,
          flags.is_distributed};
}

}  // namespace

void Block::for_each_var(const std::function<void(const VarEntry&)>& visit) const {
  const auto lock = lock_wire_vars();
  if (has_wire_vars()) {
    const WireVars& wire = *wire_vars_;
    for (std::size_t i = 0; i < wire.size(); ++i)
      if (!wire.removed(i)) visit(entry_of(wire, i));
  }
  for (const Var& var : vars_) visit(VarEntry::of(var));
}

std::optional<Block::VarEntry> Block::find_var_entry(std::string_view name) const {
  const auto lock = lock_wire_vars();
  if (const std::size_t i = wire_var_index(name); i != WireVars::npos)
    return entry_of(*wire_vars_, i);
  const VarIndex::Node* node = var_index_.find(name);
  if (!node) return std::nullopt;
  return VarEntry::of(**node);
}

std::optional<Var> Block::copy_var(std::string_view name) const {
  const auto lock = lock_wire_vars();
  if (const std::size_t i = wire_var_index(name); i != WireVars::npos)
    return wire_vars_->copy(i);
  const VarIndex::Node* node = var_index_.find(name);
  if (!node) return std::nullopt;
  return **node;
}

void Block::adopt_wire_vars(std::unique_ptr<WireVars> vars) {
  if (!vars_.empty() || wire_vars_)
    throw Error("internal error: adopt_wire_vars on a block with vars");
  wire_vars_ = std::move(vars);
}

Var* Block::find_var_locked(std::string_view name) const {
  if (const std::size_t i = wire_var_index(name); i != WireVars::npos)
    return &wire_vars_->decode(i);
  const VarIndex::Node* node = var_index_.find(name);
  return node ? &**node : nullptr;
}

Var& Block::add_var(Var var) {
  auto [added, is_new] = emplace_var(std::move(var));
  if (!is_new)
    throw Error(SourceLocation{.block = idx, .var_name = added.name}, "is declared twice");
  return added;
}

std::pair<Var&, bool> Block::emplace_var(Var var) {
  // While vars are bytes, new ones go after them in the same records, so
  // that declaration order is the records' order (vars_ stays empty).
  if (has_wire_vars()) {
    const auto [record, added] = wire_vars_->emplace_decoded(std::move(var));
    return {wire_vars_->decode(record), added};
  }
  // The var goes into the list first, so that the index's key can view its
  // name there; it comes out again when the name is taken.
  auto node = vars_.insert(vars_.end(), std::move(var));
  auto [indexed, is_new] = var_index_.try_emplace(node);
  if (!is_new) vars_.erase(node);
  return {*indexed, is_new};
}

Block::WireVarAdded Block::emplace_wire_var(std::string_view bytes, std::string_view name,
                                            WireVarFlags flags) {
  if (!has_wire_vars()) return WireVarAdded::kNotHeldAsBytes;
  return wire_vars_->emplace_bytes(bytes, name, flags).second ? WireVarAdded::kAdded
                                                             : WireVarAdded::kDeclared;
}

bool Block::splice_vars(std::list<Var>& nodes) {
  if (has_wire_vars()) mutable_vars();
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
  return find_var_locked(name);  // a non-const call runs alone
}

const Var* Block::find_var(std::string_view name) const {
  const auto lock = lock_wire_vars();
  return find_var_locked(name);
}

Var& Block::var(std::string_view name) {
  if (Var* v = find_var(name)) return *v;
  throw Error(SourceLocation{.block = idx, .var_name = std::string(name)}, "is not declared");
}

const Var& Block::var(std::string_view name) const {
  if (const Var* v = find_var(name)) return *v;
  throw Error(SourceLocation{.block = idx, .var_name = std::string(name)}, "is not declared");
}

bool Block::remove_var(std::string_view name) {
  if (const std::size_t i = wire_var_index(name); i != WireVars::npos) {
    wire_vars_->remove(i);
    return true;
  }
  const std::optional<VarIndex::Node> node = var_index_.erase(name);
  if (!node) return false;
  vars_.erase(*node);
  return true;
}

bool Block::operator==(const Block& other) const {
  return idx == other.idx && parent_idx == other.parent_idx &&
         forward_block_idx == other.forward_block_idx &&
         forward_block_idx_explicit == other.forward_block_idx_explicit &&
         unknown_fields == other.unknown_fields && vars() == other.vars() &&
         ops() == other.ops();
}

}  // namespace ctp
