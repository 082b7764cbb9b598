#include "program_ir/wire_vars.h"

#include <algorithm>
#include <bit>
#include <functional>

namespace ctp {
namespace {

uint32_t hash32(std::string_view name) {
  const uint64_t h = std::hash<std::string_view>{}(name);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

}  // namespace

WireVars::WireVars(std::vector<WireVar> records, std::shared_ptr<const void> owner,
                   Decode decode)
    : records_(std::move(records)), state_(records_.size()), owner_(std::move(owner)),
      decode_(decode), live_(records_.size()) {}

std::size_t WireVars::index_names() {
  const std::size_t capacity = std::bit_ceil(std::max<std::size_t>(2 * records_.size(), 16));
  index_.assign(capacity, 0);
  const std::size_t mask = capacity - 1;
  for (std::size_t r = 0; r < records_.size(); ++r) {
    const std::string_view name = records_[r].name;
    const uint32_t hash = hash32(name);
    std::size_t i = hash & mask;
    for (; index_[i] != 0; i = (i + 1) & mask) {
      const uint64_t entry = index_[i];
      if (static_cast<uint32_t>(entry >> 32) == hash &&
          records_[static_cast<uint32_t>(entry) - 1].name == name)
        return r;
    }
    index_[i] = (uint64_t{hash} << 32) | (r + 1);
  }
  return npos;
}

std::size_t WireVars::find(std::string_view name) const {
  if (index_.empty()) return npos;
  const std::size_t mask = index_.size() - 1;
  const uint32_t hash = hash32(name);
  for (std::size_t i = hash & mask; index_[i] != 0; i = (i + 1) & mask) {
    const uint64_t entry = index_[i];
    if (static_cast<uint32_t>(entry >> 32) != hash) continue;
    const std::size_t r = static_cast<uint32_t>(entry) - 1;
    if (records_[r].name == name) return state_[r].removed ? npos : r;
  }
  return npos;
}

Var& WireVars::decode(std::size_t i) const {
  State& state = const_cast<State&>(state_[i]);
  if (!state.var) {
    state.node = decoded_.insert(decoded_.end(), decode_(records_[i].bytes));
    state.var = &*state.node;
  }
  return *state.var;
}

void WireVars::remove(std::size_t i) {
  State& state = state_[i];
  if (state.removed) return;
  if (state.var) decoded_.erase(state.node);
  state = State{.removed = true};
  --live_;
}

std::list<Var> WireVars::take_all() {
  std::list<Var> all;
  for (std::size_t i = 0; i < records_.size(); ++i) {
    const State& state = state_[i];
    if (state.removed) continue;
    if (state.var)
      all.splice(all.end(), decoded_, state.node);
    else
      all.push_back(decode_(records_[i].bytes));
  }
  std::vector<WireVar>().swap(records_);
  std::vector<State>().swap(state_);
  std::vector<uint64_t>().swap(index_);
  owner_.reset();
  live_ = 0;
  return all;
}

}  // namespace ctp
