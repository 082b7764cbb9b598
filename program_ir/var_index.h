// A block's index from a var's name to its node in the block's var list.
//
// Open addressing with linear probing over one flat array of (hash, node)
// entries: a lookup in a block of a million vars touches one cache line of
// the array, and a var's name only when the stored hash already matches.
// std::unordered_map touched three scattered places per insert (its bucket,
// the node before the chain, the chain's nodes), which made adding vars the
// largest single cost of reading a big program (bench/RESULTS.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "program_ir/var.h"

namespace ctp {

class VarIndex {
 public:
  using Node = std::list<Var>::iterator;

  void clear();
  // Room for `count` names without growing.
  void reserve(std::size_t count);
  // The node named `name`, or nullptr when no var has that name.
  const Node* find(std::string_view name) const;
  // Indexes `node` under its var's name unless the name is taken: the node
  // that has the name afterwards, and whether it is `node`.
  std::pair<Node, bool> try_emplace(Node node);
  // Drops `name` from the index: its node, or nullopt when absent.
  std::optional<Node> erase(std::string_view name);

 private:
  struct Entry {
    uint64_t hash = 0;  // 0: an empty entry (hash_of never returns 0)
    Node node{};
  };
  static uint64_t hash_of(std::string_view name);
  std::size_t mask() const { return entries_.size() - 1; }
  // The entry holding `name`, or the empty entry where it would go.
  std::size_t slot_of(std::string_view name, uint64_t hash) const;
  void rehash(std::size_t capacity);

  std::vector<Entry> entries_;  // a power of two in size, at most half full
  std::size_t size_ = 0;
};

}  // namespace ctp
