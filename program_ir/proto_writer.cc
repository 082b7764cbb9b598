// Writing a Program as ProgramDesc bytes. The rules that make the output
// deterministic are listed in proto_io.h.
//
// Two passes over the program, so that a large output can be streamed
// instead of built whole in memory: a protobuf message's length precedes
// its body, so the size pass counts every block's, var's and op's length
// first (SizeCounter), then the write pass (StreamWriter) encodes through a
// small buffer into a ByteSink. Both passes run the same templated message
// writers below, so they cannot disagree about a field; the write pass
// checks each recorded length against what it wrote all the same.
#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "program_ir/byte_sink.h"
#include "program_ir/error.h"
#include "program_ir/framework_fields.h"
#include "program_ir/mapped_file.h"
#include "program_ir/proto_io.h"
#include "program_ir/proto_op_fields.h"
#include "program_ir/proto_write_parts.h"
#include "program_ir/wire_format.h"

namespace ctp {
namespace {

using wire::WireType;
namespace fl = fields;

// Writes a message's unknown fields at their places (unknown_fields.h).
template <class Out>
struct RawSink {
  Out& w;
  void operator()(std::string_view bytes) const { w.raw(bytes); }
};
template <class Out>
using Unknowns = UnknownFieldsCursor<const RawSink<Out>>;

template <class Out>
void write_tensor_desc(Out& w, DataType dtype, const std::vector<int64_t>& shape) {
  w.int32_field(fl::tensor_desc::kDataType, static_cast<int32_t>(dtype));
  for (int64_t d : shape) w.int64_field(fl::tensor_desc::kDims, d);
}

template <class Out>
void write_lod_tensor_desc(Out& w, uint32_t field, DataType dtype,
                           const std::vector<int64_t>& shape,
                           const std::optional<int32_t>& lod_level) {
  auto desc = w.begin_message(field);
  auto tensor = w.begin_message(fl::lod_tensor_desc::kTensor);
  write_tensor_desc(w, dtype, shape);
  w.end_message(tensor);
  if (lod_level) w.int32_field(fl::lod_tensor_desc::kLodLevel, *lod_level);
  w.end_message(desc);
}

template <class Out>
void write_var_tensor_desc(Out& w, uint32_t field, const Var& var) {
  if (kind_has_lod_level(var.type)) {
    write_lod_tensor_desc(w, field, var.dtype, var.shape, var.lod_level);
  } else {
    auto desc = w.begin_message(field);
    write_tensor_desc(w, var.dtype, var.shape);
    w.end_message(desc);
  }
}

template <class Out>
void write_var_type(Out& w, const Var& var) {
  auto body = w.begin_message(fl::var::kType);
  const RawSink<Out> sink{w};
  Unknowns<Out> unknown(var.type_unknown_fields, sink);
  unknown.before_known();
  w.int32_field(fl::var_type::kType, static_cast<int32_t>(var.type));
  // Fields in number order: the kind's description sits before reader (5)
  // for the older kinds and after tuple (7) for the newer ones.
  const uint32_t desc_field = var.has_tensor_desc() ? fl::tensor_desc_field(var.type) : 0;
  auto desc_if = [&](bool before_reader) {
    if (desc_field == 0 || (desc_field < fl::var_type::kReader) != before_reader) return;
    unknown.before_known();
    write_var_tensor_desc(w, desc_field, var);
  };
  desc_if(true);
  if (var.reader) {
    unknown.before_known();
    auto reader = w.begin_message(fl::var_type::kReader);
    for (const ReaderTensorDesc& d : *var.reader)
      write_lod_tensor_desc(w, fl::reader_desc::kLodTensor, d.dtype, d.shape, d.lod_level);
    w.end_message(reader);
  }
  if (var.tuple) {
    unknown.before_known();
    auto tuple = w.begin_message(fl::var_type::kTuple);
    for (VarKind kind : *var.tuple)
      w.int32_field(fl::tuple::kElementType, static_cast<int32_t>(kind));
    w.end_message(tuple);
  }
  desc_if(false);
  unknown.finish();
  w.end_message(body);
}

template <class Out>
void write_var_attr(Out& w, const VarAttr& attr) {
  auto body = w.begin_message(fl::var::kAttrs);
  w.bytes_field(fl::var_attr::kName, attr.name);
  w.int32_field(fl::var_attr::kType, static_cast<int32_t>(attr.type));
  if (attr.i) w.int32_field(fl::var_attr::kI, *attr.i);
  if (attr.s) w.bytes_field(fl::var_attr::kS, *attr.s);
  for (int32_t v : attr.ints) w.int32_field(fl::var_attr::kInts, v);
  w.end_message(body);
}

template <class Out>
void write_var(Out& w, const Var& var) {
  auto body = w.begin_message(fl::block::kVars);
  const RawSink<Out> sink{w};
  Unknowns<Out> unknown(var.unknown_fields, sink);
  unknown.before_known();
  w.bytes_field(fl::var::kName, var.name);
  unknown.before_known();
  write_var_type(w, var);
  const Var::ExplicitDefaults& explicit_defaults = var.explicit_defaults;
  auto flag = [&](uint32_t field, bool value, bool explicit_default) {
    if (!value && !explicit_default) return;
    unknown.before_known();
    w.bool_field(field, value);
  };
  flag(fl::var::kPersistable, var.persistable, explicit_defaults.persistable);
  flag(fl::var::kNeedCheckFeed, var.need_check_feed, explicit_defaults.need_check_feed);
  flag(fl::var::kIsParameter, var.is_parameter, explicit_defaults.is_parameter);
  flag(fl::var::kStopGradient, var.stop_gradient, explicit_defaults.stop_gradient);
  for (const VarAttr& attr : var.written_attrs()) {
    unknown.before_known();
    write_var_attr(w, attr);
  }
  unknown.finish();
  w.end_message(body);
}

template <class Out>
void write_attrs(Out& w, const Op& op, Unknowns<Out>& unknown) {
  // Attributes still as read go back as they came: one run of fields.
  if (const WireAttrs& wire = op.wire_attrs(); !wire.empty()) {
    for (uint32_t i = 0; i < wire.count; ++i) unknown.before_known();
    w.raw(wire.fields);
    return;
  }
  for (const NamedAttribute& attr : op.attrs()) {
    unknown.before_known();
    proto_write::write_op_attr(w, attr);
  }
}

// Returns the bytes it wrote when the op went back as the one run of bytes
// it was read from (for PagesBehind), else nullopt.
template <class Out>
std::optional<std::string_view> write_op(Out& w, const Op& op) {
  // An op that nothing changed since it was read goes back as its bytes
  // (both passes take this path, so the recorded lengths stay in step).
  // (A copy that shares its bytes with others, a spliced op, is three runs.)
  if (const std::optional<WireRuns> wire = op.unchanged_wire_runs()) {
    w.bytes_field(fl::block::kOps, std::span<const std::string_view>(wire->runs, wire->count));
    if (wire->count == 1) return wire->runs[0];
    return std::nullopt;
  }
  auto body = w.begin_message(fl::block::kOps);
  const RawSink<Out> sink{w};
  Unknowns<Out> unknown(op.unknown_fields, sink);
  for (const Slot& slot : op.inputs()) {
    unknown.before_known();
    proto_write::write_slot(w, fl::op::kInputs, slot);
  }
  for (const Slot& slot : op.outputs()) {
    unknown.before_known();
    proto_write::write_slot(w, fl::op::kOutputs, slot);
  }
  unknown.before_known();
  w.bytes_field(fl::op::kType, op.type);
  write_attrs(w, op, unknown);
  if (op.is_target || op.is_target_explicit) {
    unknown.before_known();
    w.bool_field(fl::op::kIsTarget, op.is_target);
  }
  unknown.finish();
  w.end_message(body);
  return std::nullopt;
}

// write_op, then `behind`, when set, passes the bytes the op was read from.
template <class Out>
void write_op_passing(Out& w, const Op& op, PagesBehind* behind) {
  const std::optional<std::string_view> read_bytes = write_op(w, op);
  if (behind && read_bytes) behind->passed(read_bytes->data());
}

// The copies a block holds after `op` (Block::insert_op_copies), as their
// bytes. (Written as bytes, they record no length in the size pass, so its
// back half, which walks the ops backwards, may count them in any order.)
template <class Out>
void write_copies_held_after(Out& w, const Block& block, const Op& op, Unknowns<Out>* unknown) {
  const OpCopies* copies = block.copies_held_after(op);
  if (!copies) return;
  for (std::size_t i = 1; i < copies->size(); ++i) {
    if (unknown) unknown->before_known();
    const WireRuns runs = copies->runs(i);
    w.bytes_field(fl::block::kOps, std::span<const std::string_view>(runs.runs, runs.count));
  }
}

// `behind`, when set, gives the input's pages back behind the pass.
template <class Out>
void write_ops(Out& w, const Block& block, Unknowns<Out>& unknown, PagesBehind* behind) {
  for (const Op& op : block.ops_holding_copies()) {
    unknown.before_known();
    write_op_passing(w, op, behind);
    if (op.heads_held_copies()) write_copies_held_after(w, block, op, &unknown);
  }
}
// The size pass's, which counts a large block's ops on two threads (below).
class SizeCounter;
void write_ops(SizeCounter& w, const Block& block, Unknowns<SizeCounter>& unknown,
               PagesBehind* behind);

// `behind`, when set, gives the input's pages back behind the pass.
template <class Out>
void write_block(Out& w, const Block& block, PagesBehind* behind) {
  auto body = w.begin_message(fl::program::kBlocks);
  const RawSink<Out> sink{w};
  Unknowns<Out> unknown(block.unknown_fields, sink);
  unknown.before_known();
  w.int32_field(fl::block::kIdx, block.idx);
  unknown.before_known();
  w.int32_field(fl::block::kParentIdx, block.parent_idx);
  // A var never decoded since it was read goes back as its bytes.
  block.for_each_var([&](const Block::VarEntry& var) {
    unknown.before_known();
    if (var.var) {
      write_var(w, *var.var);
    } else {
      w.bytes_field(fl::block::kVars, var.bytes);
      if (behind) behind->passed(var.bytes.data());
    }
  });
  write_ops(w, block, unknown, behind);
  if (block.forward_block_idx != -1 || block.forward_block_idx_explicit) {
    unknown.before_known();
    w.int32_field(fl::block::kForwardBlockIdx, block.forward_block_idx);
  }
  unknown.finish();
  w.end_message(body);
}

// With `input`, the pass gives its pages back behind it (PagesBehind).
template <class Out>
void write_program(Out& w, const Program& program, const MappedFile* input = nullptr) {
  std::optional<PagesBehind> behind;
  if (input && input->mapped()) behind.emplace(*input);
  const RawSink<Out> sink{w};
  Unknowns<Out> unknown(program.unknown_fields, sink);
  for (const Block& block : program.blocks) {
    unknown.before_known();
    write_block(w, block, behind ? &*behind : nullptr);
  }
  if (program.op_compatible_map) {
    unknown.before_known();
    w.bytes_field(fl::program::kOpCompatibleMap, *program.op_compatible_map);
  }
  if (program.version) {
    unknown.before_known();
    auto body = w.begin_message(fl::program::kVersion);
    if (*program.version != 0 || !program.version_number_absent)
      w.int64_field(fl::version::kVersion, *program.version);
    w.end_message(body);
  }
  if (program.op_version_map) {
    unknown.before_known();
    auto map = w.begin_message(fl::program::kOpVersionMap);
    for (const OpVersionEntry& entry : *program.op_version_map) {
      auto pair = w.begin_message(fl::op_version_map::kPair);
      w.bytes_field(fl::op_version_map::kPairOpName, entry.op_name);
      auto version = w.begin_message(fl::op_version_map::kPairOpVersion);
      w.int32_field(fl::op_version_map::kOpVersionVersion, entry.version);
      w.end_message(version);
      w.end_message(pair);
    }
    w.end_message(map);
  }
  unknown.finish();
}

// --- the two passes ---

using wire::varint_size;
// A key's wire type sits in its low three bits: its size is the field's.
std::size_t tag_size(uint32_t field) { return varint_size(static_cast<uint64_t>(field) << 3); }

// The messages whose lengths the size pass keeps for the write pass: the
// blocks (depth 1) and their vars and ops (depth 2), whose lengths must be
// written before their bodies. Deeper messages (slots, attrs, a var's type)
// are small: the write pass writes them in place in its buffer
// (StreamWriter::close_in_place), so their lengths need no memory.
constexpr int kRecordedDepth = 2;

// The size pass: counts the bytes the write pass will write, and records
// the length of every message down to kRecordedDepth in the order the write
// pass begins them.
class SizeCounter : public wire::FieldEncoder<SizeCounter> {
 public:
  struct Frame {
    std::size_t body_start;
    std::size_t slot;  // kNotRecorded, or the index in sizes
  };
  static constexpr std::size_t kNotRecorded = ~std::size_t{0};

  explicit SizeCounter(std::vector<uint64_t>& sizes) : sizes_(sizes) {}
  std::size_t total() const { return n_; }

  // A counter for messages at this one's depth, into `sizes` of its own.
  SizeCounter sibling(std::vector<uint64_t>& sizes) const {
    SizeCounter counter(sizes);
    counter.depth_ = depth_;
    return counter;
  }
  // Takes a sibling's count, which counted messages that come after this
  // one's, in reverse order (its recorded lengths, one per message, then
  // go in backwards).
  void append_reversed(const SizeCounter& later) {
    n_ += later.n_;
    sizes_.insert(sizes_.end(), later.sizes_.rbegin(), later.sizes_.rend());
  }

  // The primitives FieldEncoder counts fields with.
  void tag(uint32_t field, WireType) { n_ += tag_size(field); }
  void varint(uint64_t v) { n_ += varint_size(v); }
  void fixed32(uint32_t) { n_ += 4; }
  void fixed64(uint64_t) { n_ += 8; }
  void raw(std::string_view bytes) { n_ += bytes.size(); }
  Frame begin_message(uint32_t field) {
    n_ += tag_size(field);
    std::size_t slot = kNotRecorded;
    if (++depth_ <= kRecordedDepth) {
      slot = sizes_.size();
      sizes_.push_back(0);
    }
    return Frame{n_, slot};
  }
  void end_message(const Frame& frame) {
    --depth_;
    const std::size_t length = n_ - frame.body_start;
    if (frame.slot != kNotRecorded) sizes_[frame.slot] = length;
    n_ += varint_size(length);
  }

 private:
  std::vector<uint64_t>& sizes_;
  std::size_t n_ = 0;
  int depth_ = 0;
};

// Below this many ops a block's size pass runs on the calling thread alone.
constexpr std::size_t kTwoThreadSizePassFrom = 16384;

// The size pass over a large block's ops: the first half on the calling
// thread, front to back, while another walks the second half back to front
// (a list has no middle to start from), each giving the input's pages back
// behind it. That pass reads every op's type where the op lies (to see that
// it is unchanged), a cache miss each, and the core is otherwise idle then:
// the other rewrite and its staging are done. Each op records at most one
// length (its own message's; deeper ones are not recorded), so the second
// half's lengths, reversed, follow the first half's in op order. With
// unknown fields in the block, whose places count the ops, it runs alone.
void write_ops(SizeCounter& w, const Block& block, Unknowns<SizeCounter>& unknown,
               PagesBehind* behind) {
  // Halved by the list's ops, each with the copies held after it.
  const Block::OpList& list = block.ops_holding_copies();
  const std::size_t ops = list.size();
  if (block.op_count() < kTwoThreadSizePassFrom || !block.unknown_fields.empty() ||
      std::thread::hardware_concurrency() < 2)
    return write_ops<SizeCounter>(w, block, unknown, behind);
  const std::size_t back_ops = ops / 2;
  std::vector<uint64_t> back_sizes;
  back_sizes.reserve(back_ops);
  SizeCounter back = w.sibling(back_sizes);
  std::exception_ptr back_error;
  std::thread back_half([&] {
    try {
      std::optional<PagesBehind> ahead;
      if (behind) ahead.emplace(behind->file(), PagesBehind::Direction::kBackward);
      PagesBehind* const passed = ahead ? &*ahead : nullptr;
      auto it = list.end();
      for (std::size_t i = 0; i < back_ops; ++i) {
        --it;
        if (it->heads_held_copies()) write_copies_held_after<SizeCounter>(back, block, *it, nullptr);
        write_op_passing(back, *it, passed);
      }
    } catch (...) {
      back_error = std::current_exception();
    }
  });
  auto it = list.begin();
  try {
    for (std::size_t i = back_ops; i < ops; ++i, ++it) {
      write_op_passing(w, *it, behind);
      if (it->heads_held_copies()) write_copies_held_after<SizeCounter>(w, block, *it, nullptr);
    }
  } catch (...) {
    back_half.join();
    throw;
  }
  back_half.join();
  if (back_error) std::rethrow_exception(back_error);
  w.append_reversed(back);
}

// The write pass: encodes into a buffer that goes to the sink whenever a
// var, op or block is complete and the buffer holds kChunk bytes or more,
// so the whole output is never in memory. The lengths of the recorded
// messages come from the size pass (each is checked against the bytes
// actually written), and a var's or op's room is made once, at its start:
// the fields inside it are stored without growing anything, and its small
// nested messages are filled in place (their lengths widened as
// wire::Writer::end_message does).
class StreamWriter : public wire::FieldEncoder<StreamWriter> {
 public:
  struct Frame {
    std::size_t body_start;  // recorded: position in the output; else offset in the buffer
    uint64_t length;         // recorded only
    bool recorded;
  };
  static constexpr std::size_t kChunk = 64 * 1024;

  StreamWriter(ByteSink& sink, const std::vector<uint64_t>& sizes) : sink_(&sink), sizes_(sizes) {
    grow(2 * kChunk);
  }
  // Writes straight into `out`, which has room for the bytes the size pass
  // counted and a little slack (no sink, no copy).
  StreamWriter(char* out, std::size_t size, const std::vector<uint64_t>& sizes)
      : sizes_(sizes), base_(out), capacity_(size), cur_(out), end_(out + size) {}

  void raw(std::string_view bytes) {
    room(bytes.size());
    if (!bytes.empty()) std::memcpy(cur_, bytes.data(), bytes.size());
    cur_ += bytes.size();
  }
  Frame begin_message(uint32_t field) {
    tag(field, WireType::LengthDelimited);
    if (++depth_ > kRecordedDepth) {
      room(1);
      *cur_++ = '\0';  // one length byte; end_message() widens it if needed
      return Frame{used(), 0, false};
    }
    if (next_ == sizes_.size())
      throw Error("internal error: the protobuf writer's write pass has more messages");
    const uint64_t length = sizes_[next_++];
    varint(length);
    if (depth_ == kRecordedDepth) room(length);
    return Frame{position(), length, true};
  }
  void end_message(const Frame& frame) {
    if (!frame.recorded) {
      close_in_place(frame.body_start);
      --depth_;
      return;
    }
    --depth_;
    if (position() - frame.body_start != frame.length)
      throw Error("internal error: the protobuf writer's size pass counted " +
                  std::to_string(frame.length) + " bytes for a message of " +
                  std::to_string(position() - frame.body_start));
    if (used() >= kChunk) flush();
  }
  // Hands the rest to the sink; returns the bytes written in all.
  std::size_t finish() {
    if (next_ != sizes_.size())
      throw Error("internal error: the protobuf writer's passes saw different messages");
    flush();
    return position();
  }

 private:
  std::size_t used() const { return static_cast<std::size_t>(cur_ - base_); }
  std::size_t position() const { return emitted_ + used(); }
  void room(std::size_t n) {
    if (static_cast<std::size_t>(end_ - cur_) < n) make_room(n);
  }
  // Flushes when no message filled in place is open (their bodies must
  // stay in the buffer), and grows the buffer if that is not enough.
  void make_room(std::size_t n) {
    if (!sink_)
      throw Error("internal error: the protobuf writer wrote more than its size pass counted");
    if (depth_ <= kRecordedDepth) flush();
    if (static_cast<std::size_t>(end_ - cur_) < n) grow(std::max(2 * capacity_, used() + n));
  }
  void grow(std::size_t capacity) {
    auto bigger = std::make_unique<char[]>(capacity);
    const std::size_t n = base_ ? used() : 0;
    if (n) std::memcpy(bigger.get(), base_, n);
    owned_ = std::move(bigger);
    base_ = owned_.get();
    capacity_ = capacity;
    cur_ = base_ + n;
    end_ = base_ + capacity;
  }
  void flush() {
    if (!sink_ || used() == 0) return;  // writing straight into the output: nothing to hand over
    sink_->append(std::string_view(base_, used()));
    emitted_ += used();
    cur_ = base_;
  }
  // The primitives FieldEncoder writes fields with.
  friend class wire::FieldEncoder<StreamWriter>;
  void tag(uint32_t field, WireType type) {
    varint((static_cast<uint64_t>(field) << 3) | static_cast<uint32_t>(type));
  }
  void varint(uint64_t v) {
    room(10);
    cur_ = wire::put_varint(cur_, v);
  }
  void fixed32(uint32_t v) { little_endian(v, 4); }
  void fixed64(uint64_t v) { little_endian(v, 8); }
  void little_endian(uint64_t v, int bytes) {
    room(8);
    for (int i = 0; i < bytes; ++i) *cur_++ = static_cast<char>(v >> (8 * i));
  }
  // Writes the length of the message whose body starts at `body_start` in
  // the byte reserved before it, moving the body when it needs more.
  void close_in_place(std::size_t body_start) {
    const std::size_t length = used() - body_start;
    const std::size_t n = varint_size(length);
    if (n > 1) {
      room(n - 1);
      char* body = base_ + body_start;
      std::memmove(body + n - 1, body, length);
      cur_ += n - 1;
    }
    wire::put_varint(base_ + body_start - 1, length);
  }

  ByteSink* sink_ = nullptr;  // null: writing straight into the output
  const std::vector<uint64_t>& sizes_;
  std::unique_ptr<char[]> owned_;
  char* base_ = nullptr;
  std::size_t capacity_ = 0;
  char* cur_ = nullptr;
  char* end_ = nullptr;
  std::size_t next_ = 0;
  std::size_t emitted_ = 0;
  int depth_ = 0;
};

}  // namespace

namespace {

// The size pass: every recorded message's length, and the whole output's.
std::size_t count_program(const Program& program, std::vector<uint64_t>& sizes,
                          const MappedFile* input = nullptr) {
  std::size_t messages = 4;
  for (const Block& b : program.blocks) messages += 1 + b.op_count() + b.var_count();
  sizes.reserve(messages);
  SizeCounter counter(sizes);
  write_program(counter, program, input);
  return counter.total();
}

void check_written(std::size_t written, std::size_t counted) {
  if (written != counted)
    throw Error("internal error: the protobuf writer wrote " + std::to_string(written) +
                " bytes where its size pass counted " + std::to_string(counted));
}

}  // namespace

void write_program_proto(const Program& program, ByteSink& sink, const MappedFile* input) {
  std::vector<uint64_t> sizes;
  const std::size_t total = count_program(program, sizes, input);
  sink.expect_total(total);
  StreamWriter out(sink, sizes);
  write_program(out, program, input);
  check_written(out.finish(), total);
}

// Into the string directly: the size pass sizes it, the write pass fills it.
std::string serialize_program_proto(const Program& program) {
  std::vector<uint64_t> sizes;
  const std::size_t total = count_program(program, sizes);
  // The slack: a varint or fixed value asks for room for its longest form.
  constexpr std::size_t kSlack = 16;
  std::string bytes(total + kSlack, '\0');
  StreamWriter out(bytes.data(), bytes.size(), sizes);
  write_program(out, program);
  check_written(out.finish(), total);
  bytes.resize(total);
  return bytes;
}

namespace proto_write {

std::string_view encode_var_desc(const Var& var, std::string& scratch) {
  scratch.clear();
  wire::Writer w(scratch);
  write_var(w, var);
  // The bytes are the vars field of a BlockDesc: its key, its length, the VarDesc.
  wire::Reader r(scratch, 0);
  r.read_tag();
  return r.read_bytes();
}

}  // namespace proto_write
}  // namespace ctp
