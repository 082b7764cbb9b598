#include "program_ir/var_index.h"

#include <algorithm>
#include <bit>
#include <functional>

namespace ctp {

void VarIndex::clear() {
  entries_.clear();
  size_ = 0;
}

uint64_t VarIndex::hash_of(std::string_view name) {
  const uint64_t hash = std::hash<std::string_view>{}(name);
  return hash == 0 ? 1 : hash;
}

void VarIndex::reserve(std::size_t count) {
  const std::size_t wanted = std::bit_ceil(std::max<std::size_t>(2 * count, 16));
  if (wanted > entries_.size()) rehash(wanted);
}

std::size_t VarIndex::slot_of(std::string_view name, uint64_t hash) const {
  std::size_t i = hash & mask();
  while (entries_[i].hash != 0) {
    if (entries_[i].hash == hash && entries_[i].node->name == name) return i;
    i = (i + 1) & mask();
  }
  return i;
}

const VarIndex::Node* VarIndex::find(std::string_view name) const {
  if (size_ == 0) return nullptr;
  const Entry& entry = entries_[slot_of(name, hash_of(name))];
  return entry.hash == 0 ? nullptr : &entry.node;
}

std::pair<VarIndex::Node, bool> VarIndex::try_emplace(Node node) {
  if (2 * (size_ + 1) > entries_.size()) reserve(size_ + 1);
  const uint64_t hash = hash_of(node->name);
  Entry& entry = entries_[slot_of(node->name, hash)];
  if (entry.hash != 0) return {entry.node, false};
  entry = Entry{hash, node};
  ++size_;
  return {node, true};
}

std::optional<VarIndex::Node> VarIndex::erase(std::string_view name) {
  if (size_ == 0) return std::nullopt;
  std::size_t hole = slot_of(name, hash_of(name));
  if (entries_[hole].hash == 0) return std::nullopt;
  const Node erased = entries_[hole].node;
  // Backward-shift deletion: each later entry of the run that may live in
  // the hole (its home is not strictly between the hole and it) moves there,
  // so that no lookup's probe meets an empty entry before its name.
  for (std::size_t next = (hole + 1) & mask(); entries_[next].hash != 0;
       next = (next + 1) & mask()) {
    const std::size_t home = entries_[next].hash & mask();
    const bool home_between = hole <= next ? (hole < home && home <= next)
                                           : (hole < home || home <= next);
    if (home_between) continue;
    entries_[hole] = entries_[next];
    hole = next;
  }
  entries_[hole] = Entry{};
  --size_;
  return erased;
}

void VarIndex::rehash(std::size_t capacity) {
  std::vector<Entry> old = std::move(entries_);
  entries_.assign(capacity, Entry{});
  for (const Entry& entry : old) {
    if (entry.hash == 0) continue;
    std::size_t i = entry.hash & mask();
    while (entries_[i].hash != 0) i = (i + 1) & mask();
    entries_[i] = entry;
  }
}

}  // namespace ctp
