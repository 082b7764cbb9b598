// The vars of a block read from protobuf, held as their VarDesc bytes until
// something asks for one (issue 15): a rewrite looks up its parameters and
// gradients, a few in a hundred of a large program's vars, and the writer
// copies the others back as they came. A var decoded from its bytes is a
// full Var, kept for good (the reference stays valid and edits stick).
//
// Block owns one of these while it has vars still held as bytes (block.h)
// and turns them all into Vars, in order, when its whole var list is asked
// for (Block::vars()).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "program_ir/huge_page_allocator.h"
#include "program_ir/var.h"

namespace ctp {

// What the reader notes of a var, and what a whole-block walk asks of every
// var (the parameters of a program), so that the walk decodes nothing.
struct WireVarFlags {
  bool persistable = false;
  bool is_parameter = false;
  bool is_distributed = false;
};

class WireVars {
 public:
  // Decodes checked VarDesc bytes (the reader's parser).
  using Decode = Var (*)(std::string_view bytes);
  static constexpr std::size_t npos = SIZE_MAX;

  // Room for `count` records, which the reader then fills (set); `owner`
  // keeps their bytes alive.
  WireVars(std::size_t count, std::shared_ptr<const void> owner, Decode decode);
  WireVars(const WireVars&) = delete;
  WireVars& operator=(const WireVars&) = delete;
  ~WireVars();

  // Record i: a VarDesc's fields (checked) and its name within them. The
  // reader's threads may set different records at once.
  void set(std::size_t i, std::string_view bytes, std::string_view name, WireVarFlags flags);
  // Indexes the records by name: the position of the first record whose
  // name an earlier record has, or npos when every name is new. kWide takes
  // the 64-bit entries whatever the count (tests reach them so).
  enum class IndexWidth { kFit, kWide };
  std::size_t index_names(IndexWidth width = IndexWidth::kFit);

  // Adds a var after the others, to be held the same way, unless a record
  // not removed has its name: its VarDesc fields (`name` lies within them),
  // copied into storage of this object's own (emplace_bytes), or already a
  // Var (emplace_decoded, which moves from `var` only when it adds it).
  // Returns the record of that name and whether it was added; one probe of
  // the index either way (a rewrite adds a few vars per parameter). For a
  // block's non-const calls only: they run alone.
  std::pair<std::size_t, bool> emplace_bytes(std::string_view bytes, std::string_view name,
                                             WireVarFlags flags);
  std::pair<std::size_t, bool> emplace_decoded(Var&& var);
  // Room for `count` records in all, so that adding up to that many grows
  // neither the records nor the index again: a rewrite that adds many vars
  // (MultiThread all_gather adds a var per rank per parameter, four times
  // a large program's own) would otherwise rebuild the index twice,
  // reading every name each time.
  void reserve(std::size_t count);

  // Whether records remain (take_all has not run): safe beside const
  // callers that hold mutex().
  bool active() const { return active_.load(std::memory_order_acquire); }
  std::size_t size() const { return records_.size(); }
  std::size_t live_count() const { return live_; }
  std::string_view bytes(std::size_t i) const { return records_[i].bytes(); }
  std::string_view name(std::size_t i) const { return records_[i].name(); }
  WireVarFlags flags(std::size_t i) const {
    const Record& r = records_[i];
    return {r.persistable, r.is_parameter, r.is_distributed};
  }
  bool removed(std::size_t i) const { return records_[i].removed; }
  // The record named `name` (not removed), or npos.
  std::size_t find(std::string_view name) const;
  // The record's Var, decoded on first use (nullptr until then). Callers
  // that may run beside others (const calls of a block) hold mutex().
  Var* decoded(std::size_t i) const {
    const Record& r = records_[i];
    return r.decoded ? &r.var->front() : nullptr;
  }
  Var& decode(std::size_t i) const;
  // The record's Var, decoded afresh when it is still bytes (and left so).
  Var copy(std::size_t i) const {
    const Record& r = records_[i];
    return r.decoded ? r.var->front() : decode_(r.bytes());
  }
  // Drops the record (and its Var, when decoded).
  void remove(std::size_t i);
  // Every record not removed, as Vars in order (decoded ones keep their
  // nodes, so references to them stay valid). Leaves this empty; the
  // caller holds mutex() when const callers may run beside, and retire()s
  // this once the Vars are in their place.
  std::list<Var> take_all();
  void retire() { active_.store(false, std::memory_order_release); }

  // Guards decoding for const callers of a block (block.h).
  std::mutex& mutex() const { return mutex_; }

 private:
  // 24 bytes: a large program has hundreds of thousands. A decoded
  // record's Var lives in a list of its own (so that take_all splices it
  // into place, node and all) in the place of its bytes, which nothing
  // reads again: its name is then the Var's.
  struct Record {
    union {
      const char* data = nullptr;  // the VarDesc's fields
      std::list<Var>* var;         // once decoded
    };
    uint32_t size = 0;
    uint32_t name_offset = 0;  // the name, within the fields
    uint32_t name_size = 0;
    bool persistable : 1 = false;
    bool is_parameter : 1 = false;
    bool is_distributed : 1 = false;
    bool removed : 1 = false;
    bool decoded : 1 = false;
    std::string_view bytes() const { return {data, size}; }
    std::string_view name() const {
      return decoded ? std::string_view(var->front().name)
                     : std::string_view(data + name_offset, name_size);
    }
  };
  std::vector<Record> records_;
  // Open addressing over the records, a power of two in size and at most
  // half full, built once and rebuilt as appends fill it (a removed record
  // stays in it until then; find skips it).
  // An entry is record + 1 (0: empty) under a tag of its name's hash, so
  // that a probe reads a name only when the tags match: 8 bits of tag in 32
  // while records fit in 24 bits (4 bytes an entry: a large block has
  // hundreds of thousands of vars), else 32 bits of tag in 64.
  template <typename Entry>
  using Index = std::vector<Entry, HugePageAllocator<Entry>>;
  Index<uint32_t> index32_;
  Index<uint64_t> index64_;
  // Indexes every record not removed, with room for `room` records.
  template <typename Entry>
  std::size_t index_into(Index<Entry>& index, std::size_t room);
  // The record not removed named `name`, or where a record of that name
  // would go (find, index_into, and probe_for_new, which first grows the
  // index to take one more).
  struct Probe {
    std::size_t existing = npos;
    std::size_t slot = 0;
    uint32_t hash = 0;
  };
  template <typename Entry>
  Probe probe_in(const Index<Entry>& index, std::string_view name) const;
  Probe probe_for_new(std::string_view name);
  // Makes the index at most half full with `count` records (rebuilding it
  // when not); whether it is the wide one.
  bool index_room(std::size_t count);
  // Appends `record` where `probe` says.
  std::size_t append_at(const Probe& probe, const Record& record);
  // Appended vars' bytes: chunks that only grow, so that records can view
  // them (a rewrite adds up to a few vars per parameter, ~50 bytes each).
  std::string_view keep_bytes(std::string_view bytes);
  std::vector<std::unique_ptr<char[]>> appended_chunks_;
  char* chunk_free_ = nullptr;
  std::size_t chunk_left_ = 0;
  std::shared_ptr<const void> owner_;
  Decode decode_;
  std::size_t live_ = 0;
  std::atomic<bool> active_{true};
  mutable std::mutex mutex_;
};

}  // namespace ctp
