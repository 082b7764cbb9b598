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

WireVars::WireVars(std::size_t count, std::shared_ptr<const void> owner, Decode decode)
    : records_(count), owner_(std::move(owner)),
      decode_(decode), live_(count) {}

void WireVars::set(std::size_t i, std::string_view bytes, std::string_view name,
                   WireVarFlags flags) {
  Record& r = records_[i];
  r.data = bytes.data();
  r.size = static_cast<uint32_t>(bytes.size());
  r.name_offset = static_cast<uint32_t>(name.data() - bytes.data());
  r.name_size = static_cast<uint32_t>(name.size());
  r.persistable = flags.persistable;
  r.is_parameter = flags.is_parameter;
  r.is_distributed = flags.is_distributed;
}

std::size_t WireVars::index_names() {
  const std::size_t capacity = std::bit_ceil(std::max<std::size_t>(2 * records_.size(), 16));
  index_.assign(capacity, 0);
  const std::size_t mask = capacity - 1;
  for (std::size_t r = 0; r < records_.size(); ++r) {
    const std::string_view name = records_[r].name();
    const uint32_t hash = hash32(name);
    std::size_t i = hash & mask;
    for (; index_[i] != 0; i = (i + 1) & mask) {
      const uint64_t entry = index_[i];
      if (static_cast<uint32_t>(entry >> 32) == hash &&
          records_[static_cast<uint32_t>(entry) - 1].name() == name)
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
    if (records_[r].name() == name) return records_[r].removed ? npos : r;
  }
  return npos;
}

Var& WireVars::decode(std::size_t i) const {
  Record& r = const_cast<Record&>(records_[i]);
  if (r.decoded) return *nodes_.find(i)->second;
  const auto node = decoded_.insert(decoded_.end(), decode_(r.bytes()));
  nodes_.emplace(i, node);
  r.decoded = true;
  return *node;
}

void WireVars::remove(std::size_t i) {
  Record& r = records_[i];
  if (r.removed) return;
  if (r.decoded) {
    const auto found = nodes_.find(i);
    decoded_.erase(found->second);
    nodes_.erase(found);
    r.decoded = false;
  }
  r.removed = true;
  --live_;
}

std::list<Var> WireVars::take_all() {
  std::list<Var> all;
  for (std::size_t i = 0; i < records_.size(); ++i) {
    const Record& r = records_[i];
    if (r.removed) continue;
    if (r.decoded)
      all.splice(all.end(), decoded_, nodes_.find(i)->second);
    else
      all.push_back(decode_(r.bytes()));
  }
  std::vector<Record>().swap(records_);
  std::vector<uint64_t>().swap(index_);
  nodes_.clear();
  owner_.reset();
  live_ = 0;
  return all;
}

}  // namespace ctp
