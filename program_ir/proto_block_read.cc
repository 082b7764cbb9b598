// Reading a BlockDesc (proto_read_parts.h). A first pass reads the block's
// own fields and finds its vars' and ops' messages by their tags and lengths
// alone; the messages are then parsed in chunks, on several threads for a
// large block (a program's vars and ops are most of its bytes, and each
// parses on its own), and joined in file order. The result, errors
// included, is what reading field after field gives: when several chunks
// fail, the failure at the earliest byte is the one reported.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "program_ir/error.h"
#include "program_ir/framework_fields.h"
#include "program_ir/proto_read_parts.h"
#include "program_ir/wire_read.h"
#include "program_ir/wire_vars.h"

namespace ctp::proto_read {
namespace {

using namespace wire_read;
namespace fl = fields;

// A var's or op's message: its bytes and where they start in the input.
struct Message {
  std::string_view bytes;
  std::size_t base;
  Reader reader() const { return Reader(bytes, base); }
};

// The first failure of a part of the work, by the input offset of the
// field it failed at.
struct Failure {
  std::size_t at = SIZE_MAX;
  std::exception_ptr error;
  void keep(std::size_t offset, std::exception_ptr e) {
    if (offset < at) {
      at = offset;
      error = std::move(e);
    }
  }
  // In a catch block: the exception being handled.
  void note(std::size_t offset) { keep(offset, std::current_exception()); }
};

// How many chunks `threads` threads cut `n` messages into.
std::size_t chunk_count(std::size_t n, unsigned threads) {
  constexpr std::size_t kChunksPerThread = 8;
  return threads <= 1 ? 1 : std::max<std::size_t>(1, std::min(n, threads * kChunksPerThread));
}

// Calls visit(chunk, i, reader, place) for every message i, `place` naming
// it (place.*ordinal = i), in `chunks` chunks on `threads` threads (the
// calling thread and threads - 1 others), which take chunks in turn, so
// that a thread slowed down takes fewer. A chunk stops at its first
// failure; `failure` keeps the one at the earliest byte. The calling thread
// runs beside() first, when given, while the others start. With `mapped`,
// a chunk's pages go back once it is read.
template <typename Visit>
void visit_messages(const std::vector<Message>& messages, std::size_t chunks, unsigned threads,
                    const SourceLocation& place, int64_t SourceLocation::*ordinal,
                    const Visit& visit, Failure& failure, const std::function<void()>& beside,
                    const MappedFile* mapped) {
  const std::size_t n = messages.size();
  std::vector<Failure> failures(chunks);
  std::atomic<std::size_t> next{0};
  auto take_chunks = [&] {
    for (std::size_t c = next++; c < chunks; c = next++) {
      SourceLocation at = place;
      const std::size_t first = n * c / chunks, end = n * (c + 1) / chunks;
      for (std::size_t i = first; i < end; ++i) {
        at.*ordinal = static_cast<int64_t>(i);
        try {
          visit(c, i, messages[i].reader(), at);
        } catch (...) {
          failures[c].note(messages[i].base);
          break;
        }
      }
      if (mapped && first < end)
        mapped->release(messages[first].bytes.data(),
                        messages[end - 1].bytes.data() + messages[end - 1].bytes.size());
    }
  };
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < threads && t < chunks; ++t) helpers.emplace_back(take_chunks);
  if (beside) beside();
  take_chunks();
  for (std::thread& t : helpers) t.join();
  for (const Failure& f : failures)
    if (f.error) failure.keep(f.at, f.error);
}

// Parses every message into one list in file order (visit_messages).
template <typename T, typename Parse>
std::list<T> parse_all(const std::vector<Message>& messages, unsigned threads,
                       const SourceLocation& place, int64_t SourceLocation::*ordinal,
                       const Parse& parse, Failure& failure,
                       const std::function<void()>& beside = nullptr,
                       const MappedFile* mapped = nullptr) {
  const std::size_t chunks = chunk_count(messages.size(), threads);
  std::vector<std::list<T>> parts(chunks);
  visit_messages(
      messages, chunks, threads, place, ordinal,
      [&](std::size_t c, std::size_t, Reader r, SourceLocation& at) {
        parts[c].push_back(parse(r, at));
      },
      failure, beside, mapped);
  for (std::size_t c = 1; c < chunks; ++c) parts[0].splice(parts[0].end(), parts[c]);
  return std::move(parts[0]);
}

// The block's own fields, and where its vars and ops are.
struct BlockFields {
  std::vector<Message> vars, ops;
  bool has_idx = false, has_parent = false;
};

// With `behind`, the pages of the messages found go back behind the scan
// (it reads a tag and a length of each, which maps every page).
void find_messages(Reader& r, Block& block, BlockFields& found, SourceLocation& place,
                   PagesBehind* behind) {
  std::size_t known = 0;
  guarded(place, [&] {
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::block::kIdx:
          block.idx = wire::as_int32(read_varint_field(r, tag, start, "idx"));
          found.has_idx = true;
          break;
        case fl::block::kParentIdx:
          block.parent_idx = wire::as_int32(read_varint_field(r, tag, start, "parent_idx"));
          found.has_parent = true;
          break;
        case fl::block::kVars:
        case fl::block::kOps: {
          const bool is_var = tag.field == fl::block::kVars;
          std::vector<Message>& list = is_var ? found.vars : found.ops;
          (is_var ? place.var : place.op) = static_cast<long>(list.size());
          const Reader nested = nested_at(r, tag, start, is_var ? "vars" : "ops", place);
          list.push_back(Message{nested.span(0, nested.remaining()), nested.offset()});
          if (behind) behind->passed(list.back().bytes.data());
          place.var = place.op = -1;
          break;
        }
        case fl::block::kForwardBlockIdx:
          block.forward_block_idx =
              wire::as_int32(read_varint_field(r, tag, start, "forward_block_idx"));
          block.forward_block_idx_explicit = block.forward_block_idx == -1;
          break;
        default: block.unknown_fields.append(known, r.skip_field(tag, start)); return;
      }
      ++known;
    });
    block.unknown_fields.close(known);
  });
}

// Adds the parsed vars in order; a name declared twice fails at the later.
void add_vars(Block& block, std::list<Var>& vars, const std::vector<Message>& messages,
              const SourceLocation& block_place, Failure& failure) {
  block.reserve_vars(vars.size());
  if (block.splice_vars(vars)) return;
  const std::size_t i = block.var_count();  // the refused var's position
  SourceLocation place = block_place;
  place.var = static_cast<int64_t>(i);
  place.var_name = vars.front().name;
  failure.keep(messages[i].base,
               std::make_exception_ptr(Error(place, "declared twice in the block")));
}

// A VarDesc the reader checked, decoded again (WireVars::Decode).
Var decode_checked_var(std::string_view bytes) {
  SourceLocation place;
  return parse_var(Reader(bytes, 0), place);
}

// With an owner of the input, the vars stay their bytes (wire_vars.h): each
// is parsed here only to check it and to note its name and flags.
std::unique_ptr<WireVars> check_vars(const std::vector<Message>& messages, unsigned threads,
                                     const InputOwner& input, const SourceLocation& place,
                                     Failure& failure) {
  auto vars = std::make_unique<WireVars>(messages.size(), input.owner, decode_checked_var);
  visit_messages(
      messages, chunk_count(messages.size(), threads), threads, place, &SourceLocation::var,
      [&](std::size_t, std::size_t i, Reader r, SourceLocation& at) {
        std::string_view name;
        const Var var = parse_var(r, at, &name);
        at.var_name.clear();
        vars->set(i, messages[i].bytes, name,
                  WireVarFlags{var.persistable, var.is_parameter, var.is_distributed});
      },
      failure, nullptr, input.mapped);
  return vars;
}

// Indexes the checked vars by name and gives them to the block; a name
// declared twice fails at the later.
void adopt_vars(Block& block, std::unique_ptr<WireVars> vars,
                const std::vector<Message>& messages, const SourceLocation& block_place,
                Failure& failure) {
  const std::size_t twice = vars->index_names();
  if (twice != WireVars::npos) {
    SourceLocation place = block_place;
    place.var = static_cast<int64_t>(twice);
    place.var_name = vars->name(twice);
    failure.keep(messages[twice].base,
                 std::make_exception_ptr(Error(place, "declared twice in the block")));
    return;
  }
  block.adopt_wire_vars(std::move(vars));
}

// Below this many vars and ops a block is read on the calling thread alone.
constexpr std::size_t kParallelFrom = 8192;

}  // namespace

Block parse_block(Reader r, SourceLocation& place, const InputOwner& input, unsigned threads) {
  Block block;
  BlockFields found;
  Failure failure;
  std::optional<PagesBehind> behind;
  if (input.mapped) behind.emplace(*input.mapped);
  try {
    find_messages(r, block, found, place, behind ? &*behind : nullptr);
  } catch (...) {
    // Reported only if no var or op before the bad field fails too.
    failure.note(r.offset());
  }
  // The chunks map their pages again as they parse them, and give them back.
  if (found.vars.size() + found.ops.size() < kParallelFrom) threads = 1;
  auto parse_one_var = [](Reader m, SourceLocation& at) {
    Var var = parse_var(m, at);
    at.var_name.clear();
    return var;
  };
  auto parse_one_op = [&input](Reader m, SourceLocation& at) {
    Op op = parse_op(m, at, input);
    at.op_type.clear();
    return op;
  };
  std::list<Var> vars;
  std::unique_ptr<WireVars> wire_vars;
  if (input.owner)
    wire_vars = check_vars(found.vars, threads, input, place, failure);
  else
    vars = parse_all<Var>(found.vars, threads, place, &SourceLocation::var, parse_one_var, failure);
  auto index_vars = [&] {
    if (input.owner)
      adopt_vars(block, std::move(wire_vars), found.vars, place, failure);
    else
      add_vars(block, vars, found.vars, place, failure);
  };
  // The other threads start on the ops while this one indexes the vars.
  std::list<Op> ops = parse_all<Op>(found.ops, threads, place, &SourceLocation::op, parse_one_op,
                                    failure, index_vars, input.mapped);
  if (failure.error) std::rethrow_exception(failure.error);
  block.ops().splice(block.ops().end(), ops);
  if (!found.has_idx) fail(place, "BlockDesc has no idx (field 1)");
  if (!found.has_parent) fail(place, "BlockDesc has no parent_idx (field 2)");
  return block;
}

}  // namespace ctp::proto_read
