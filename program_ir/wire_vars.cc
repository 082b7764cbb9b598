#include "program_ir/wire_vars.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <memory>

namespace ctp {
namespace {

uint32_t hash32(std::string_view name) {
  const uint64_t h = std::hash<std::string_view>{}(name);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

// An index entry: record + 1 in the low bits, the hash's top bits above.
template <typename Entry>
struct EntryCodec {
  static constexpr unsigned kRecordBits = sizeof(Entry) == 4 ? 24 : 32;
  static constexpr Entry kRecordMask = (Entry{1} << kRecordBits) - 1;
  static Entry tag(uint32_t hash) {
    return static_cast<Entry>(static_cast<Entry>(hash) >> (32 - (8 * sizeof(Entry) - kRecordBits)))
           << kRecordBits;
  }
  static Entry pack(uint32_t hash, std::size_t record) {
    return tag(hash) | static_cast<Entry>(record + 1);
  }
  static bool tag_matches(Entry entry, uint32_t hash) {
    return (entry & ~kRecordMask) == tag(hash);
  }
  static std::size_t record(Entry entry) { return (entry & kRecordMask) - 1; }
};

}  // namespace

WireVars::WireVars(std::size_t count, std::shared_ptr<const void> owner, Decode decode)
    : records_(count), owner_(std::move(owner)), decode_(decode), live_(count) {}

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

template <typename Entry>
WireVars::Probe WireVars::probe_in(const Index<Entry>& index, std::string_view name) const {
  using Codec = EntryCodec<Entry>;
  const std::size_t mask = index.size() - 1;
  Probe probe{.hash = hash32(name)};
  std::size_t i = probe.hash & mask;
  for (; index[i] != 0; i = (i + 1) & mask) {
    if (!Codec::tag_matches(index[i], probe.hash)) continue;
    const std::size_t r = Codec::record(index[i]);
    if (!records_[r].removed && records_[r].name() == name) {
      probe.existing = r;
      return probe;
    }
  }
  probe.slot = i;
  return probe;
}

template <typename Entry>
std::size_t WireVars::index_into(Index<Entry>& index, std::size_t room) {
  using Codec = EntryCodec<Entry>;
  const std::size_t capacity = std::bit_ceil(std::max<std::size_t>(2 * room, 16));
  index.assign(capacity, 0);
  for (std::size_t r = 0; r < records_.size(); ++r) {
    if (records_[r].removed) continue;
    const Probe probe = probe_in(index, records_[r].name());
    if (probe.existing != npos) return r;
    index[probe.slot] = Codec::pack(probe.hash, r);
  }
  return npos;
}

std::size_t WireVars::index_names(IndexWidth width) {
  constexpr std::size_t kSmall = EntryCodec<uint32_t>::kRecordMask;  // record + 1 fits
  if (width == IndexWidth::kFit && records_.size() < kSmall)
    return index_into(index32_, records_.size());
  return index_into(index64_, records_.size());
}

std::size_t WireVars::find(std::string_view name) const {
  if (!index32_.empty()) return probe_in(index32_, name).existing;
  if (!index64_.empty()) return probe_in(index64_, name).existing;
  return npos;
}

bool WireVars::index_room(std::size_t count) {
  constexpr std::size_t kSmall = EntryCodec<uint32_t>::kRecordMask;  // record + 1 fits
  const bool wide = !index64_.empty() || count >= kSmall;
  if (wide && !index32_.empty()) Index<uint32_t>().swap(index32_);
  // Rebuilt whole (without removed records) when `count` would make it more
  // than half full; then half full at most again.
  if (2 * count > (wide ? index64_.size() : index32_.size())) {
    if (wide)
      index_into(index64_, count);
    else
      index_into(index32_, count);
  }
  return wide;
}

void WireVars::reserve(std::size_t count) {
  if (count <= records_.size()) return;
  records_.reserve(count);
  index_room(count);
}

WireVars::Probe WireVars::probe_for_new(std::string_view name) {
  const bool wide = index_room(records_.size() + 1);
  return wide ? probe_in(index64_, name) : probe_in(index32_, name);
}

std::size_t WireVars::append_at(const Probe& probe, const Record& record) {
  const std::size_t r = records_.size();
  records_.push_back(record);
  if (!index64_.empty())
    index64_[probe.slot] = EntryCodec<uint64_t>::pack(probe.hash, r);
  else
    index32_[probe.slot] = EntryCodec<uint32_t>::pack(probe.hash, r);
  ++live_;
  return r;
}

std::string_view WireVars::keep_bytes(std::string_view bytes) {
  constexpr std::size_t kChunk = 64 * 1024;
  if (bytes.size() > chunk_left_) {
    const std::size_t size = std::max(kChunk, bytes.size());
    appended_chunks_.push_back(std::make_unique_for_overwrite<char[]>(size));
    chunk_free_ = appended_chunks_.back().get();
    chunk_left_ = size;
  }
  char* kept = chunk_free_;
  std::memcpy(kept, bytes.data(), bytes.size());
  chunk_free_ += bytes.size();
  chunk_left_ -= bytes.size();
  return {kept, bytes.size()};
}

std::pair<std::size_t, bool> WireVars::emplace_bytes(std::string_view bytes,
                                                     std::string_view name, WireVarFlags flags) {
  const Probe probe = probe_for_new(name);
  if (probe.existing != npos) return {probe.existing, false};
  const std::size_t name_offset = static_cast<std::size_t>(name.data() - bytes.data());
  const std::string_view kept = keep_bytes(bytes);
  const std::size_t r = append_at(probe, Record{});
  set(r, kept, kept.substr(name_offset, name.size()), flags);
  return {r, true};
}

std::pair<std::size_t, bool> WireVars::emplace_decoded(Var&& var) {
  const Probe probe = probe_for_new(var.name);
  if (probe.existing != npos) return {probe.existing, false};
  auto node = std::make_unique<std::list<Var>>();
  node->push_back(std::move(var));
  Record record;
  record.var = node.get();
  record.decoded = true;
  const std::size_t r = append_at(probe, record);
  node.release();  // the record owns it now (~WireVars, take_all)
  return {r, true};
}

WireVars::~WireVars() {
  for (const Record& r : records_)
    if (r.decoded) delete r.var;
}

Var& WireVars::decode(std::size_t i) const {
  Record& r = const_cast<Record&>(records_[i]);
  if (!r.decoded) {
    auto node = std::make_unique<std::list<Var>>();
    node->push_back(decode_(r.bytes()));
    r.var = node.release();
    r.decoded = true;
  }
  return r.var->front();
}

void WireVars::remove(std::size_t i) {
  Record& r = records_[i];
  if (r.removed) return;
  if (r.decoded) {
    delete r.var;
    r.data = nullptr;
    r.decoded = false;
  }
  r.removed = true;
  --live_;
}

std::list<Var> WireVars::take_all() {
  std::list<Var> all;
  for (Record& r : records_) {
    if (r.removed) continue;
    if (r.decoded) {
      all.splice(all.end(), *r.var);
      delete r.var;
      r.decoded = false;
    } else {
      all.push_back(decode_(r.bytes()));
    }
  }
  std::vector<Record>().swap(records_);
  Index<uint32_t>().swap(index32_);
  Index<uint64_t>().swap(index64_);
  owner_.reset();
  std::vector<std::unique_ptr<char[]>>().swap(appended_chunks_);
  chunk_free_ = nullptr;
  chunk_left_ = 0;
  live_ = 0;
  return all;
}

}  // namespace ctp
