#include "program_ir/op_packing.h"

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "program_ir/error.h"
#include "program_ir/framework_fields.h"
#include "program_ir/op_role.h"
#include "program_ir/proto_op_fields.h"
#include "program_ir/wire_format.h"
#include "program_ir/wire_slots.h"

namespace ctp {
namespace {

namespace fl = fields;

// Where the parts of an encoded OpDesc lie, and what the reader would note.
struct EncodedOp {
  std::string& bytes;
  std::size_t type_at = 0;
  std::size_t attrs_from = 0, attrs_to = 0;
  uint32_t input_names = 0, output_names = 0;
  uint32_t op_role_at = WireAttrs::kAbsent;
  uint32_t op_role_var_at = WireAttrs::kAbsent;
  const NamedAttribute* op_role = nullptr;
};

// A slot field naming one var, as write_slot writes a slot of one argument.
void write_var_slot(wire::Writer& w, uint32_t field, std::string_view name,
                    std::string_view var) {
  auto body = w.begin_message(field);
  w.bytes_field(fl::op_slot::kParameter, name);
  w.bytes_field(fl::op_slot::kArguments, var);
  w.end_message(body);
}

// Encodes `parts` as the writer's write_op does (same field order, same
// helpers), noting what adopt needs on the way.
// Into `scratch`, which it overwrites.
EncodedOp encode(const OpParts& parts, std::string& scratch) {
  scratch.clear();
  EncodedOp out{.bytes = scratch};
  wire::Writer w(out.bytes);
  for (const Slot& slot : parts.inputs) {
    proto_write::write_slot(w, fl::op::kInputs, slot);
    out.input_names |= slot_name_bit(slot.name);
  }
  for (const VarSlot& slot : parts.var_inputs) {
    write_var_slot(w, fl::op::kInputs, slot.name, slot.var);
    out.input_names |= slot_name_bit(slot.name);
  }
  for (const Slot& slot : parts.outputs) {
    proto_write::write_slot(w, fl::op::kOutputs, slot);
    out.output_names |= slot_name_bit(slot.name);
  }
  for (const VarSlot& slot : parts.var_outputs) {
    write_var_slot(w, fl::op::kOutputs, slot.name, slot.var);
    out.output_names |= slot_name_bit(slot.name);
  }
  w.bytes_field(fl::op::kType, parts.type);
  out.type_at = out.bytes.size() - parts.type.size();
  out.attrs_from = out.bytes.size();
  if (parts.wire_attrs) {
    w.raw(parts.wire_attrs->fields);
  } else {
    for (const std::span<const NamedAttribute> run : {parts.attrs, parts.more_attrs}) {
      for (const NamedAttribute& attr : run) {
        const auto at = static_cast<uint32_t>(out.bytes.size() - out.attrs_from);
        if (attr.name == kOpRoleAttr && !out.op_role) {
          out.op_role_at = at;
          out.op_role = &attr;
        }
        if (attr.name == kOpRoleVarAttr && out.op_role_var_at == WireAttrs::kAbsent)
          out.op_role_var_at = at;
        proto_write::write_op_attr(w, attr);
      }
    }
  }
  out.attrs_to = out.bytes.size();
  if (parts.is_target || parts.is_target_explicit) w.bool_field(fl::op::kIsTarget, parts.is_target);
  return out;
}

// The attributes' run kept as the reader keeps it, with the same notes;
// `fields` is where the run lies now.
WireAttrs adopt_attrs(const OpParts& parts, const EncodedOp& encoded, std::string_view fields,
                      const std::shared_ptr<const void>& owner) {
  if (parts.wire_attrs) {
    WireAttrs wire = *parts.wire_attrs;  // its notes are offsets within the run
    wire.fields = fields;
    wire.owner = owner;
    return wire;
  }
  WireAttrs wire{.fields = fields,
                 .owner = owner,
                 .count = static_cast<uint32_t>(parts.attrs.size() + parts.more_attrs.size()),
                 .names_lead = true};
  wire.roles_noted = true;
  wire.op_role_at = encoded.op_role_at;
  wire.op_role_var_at = encoded.op_role_var_at;
  if (encoded.op_role) {
    const Attribute& role = encoded.op_role->value;
    if (role.type() == AttrType::INT) {
      wire.op_role_kind = WireAttrs::RoleKind::kInt;
      wire.op_role_value = role.get<int32_t>();
    } else if (role.type() == AttrType::LONG) {
      wire.op_role_kind = WireAttrs::RoleKind::kLong;
      wire.op_role_value = role.get<int64_t>();
    }
  }
  return wire;
}

// Where packed ops' bytes go: chunks shared by the ops packed into them,
// each op holding a share of its chunk (an aliasing shared_ptr), so that an
// op costs its bytes and no allocation of its own (an allocation and a
// control block were ~32 bytes an op: a 1M-op local_sgd adds 1.5M ops).
// A chunk goes when its last op does. An allocation cache, one chunk in
// filling per thread: it changes where bytes lie, never what an op holds.
class PackedBytes {
 public:
  // A copy of `bytes` and what keeps it alive.
  std::pair<std::string_view, std::shared_ptr<const void>> keep(std::string_view bytes) {
    if (bytes.size() > kChunk / 8) {  // a large op (a coalesce of every grad): its own
      std::shared_ptr<char[]> own = std::make_shared_for_overwrite<char[]>(bytes.size());
      std::memcpy(own.get(), bytes.data(), bytes.size());
      const std::string_view kept(own.get(), bytes.size());
      return {kept, std::shared_ptr<const void>(std::move(own))};
    }
    if (kChunk - used_ < bytes.size() || !chunk_) {
      chunk_ = std::make_shared_for_overwrite<char[]>(kChunk);
      used_ = 0;
    }
    char* at = chunk_.get() + used_;
    std::memcpy(at, bytes.data(), bytes.size());
    used_ += bytes.size();
    return {std::string_view(at, bytes.size()), std::shared_ptr<const void>(chunk_, at)};
  }

 private:
  static constexpr std::size_t kChunk = 64 * 1024;
  std::shared_ptr<char[]> chunk_;
  std::size_t used_ = 0;
};

thread_local PackedBytes packed_bytes;
// Where an op is encoded before its bytes are copied to where they stay:
// one buffer per thread, so that encoding allocates nothing.
thread_local std::string encode_scratch;

bool has_attrs(const OpParts& parts) {
  return parts.wire_attrs ? !parts.wire_attrs->empty()
                          : !parts.attrs.empty() || !parts.more_attrs.empty();
}

// An op of `parts`' type and flags, its slots and attributes still to set.
Op bare_op(const OpParts& parts) {
  Op op;
  op.type = parts.type;
  op.is_target = parts.is_target;
  op.is_target_explicit = parts.is_target_explicit;
  return op;
}

// `parts` as an op built in memory, for a type too long for a WireOp to say.
Op unpacked_op(const OpParts& parts) {
  std::vector<Slot> inputs(parts.inputs.begin(), parts.inputs.end());
  for (const VarSlot& slot : parts.var_inputs)
    inputs.push_back(Slot{std::string(slot.name), {std::string(slot.var)}});
  std::vector<Slot> outputs(parts.outputs.begin(), parts.outputs.end());
  for (const VarSlot& slot : parts.var_outputs)
    outputs.push_back(Slot{std::string(slot.name), {std::string(slot.var)}});
  Op op(std::string(parts.type), std::move(inputs), std::move(outputs));
  if (parts.wire_attrs) {
    op.set_wire_attrs(*parts.wire_attrs);
  } else {
    op.mutable_attrs().assign(parts.attrs.begin(), parts.attrs.end());
    op.mutable_attrs().insert(op.mutable_attrs().end(), parts.more_attrs.begin(),
                              parts.more_attrs.end());
  }
  op.is_target = parts.is_target;
  op.is_target_explicit = parts.is_target_explicit;
  return op;
}

}  // namespace

Op packed_op(const OpParts& parts) {
  if (parts.type.size() > WireOp::kMaxTypeSize) return unpacked_op(parts);
  const EncodedOp encoded = encode(parts, encode_scratch);
  const auto [bytes, owner] = packed_bytes.keep(encoded.bytes);
  Op op = bare_op(parts);
  if (has_attrs(parts))
    op.set_wire_attrs(adopt_attrs(
        parts, encoded, bytes.substr(encoded.attrs_from, encoded.attrs_to - encoded.attrs_from),
        owner));
  WireOp wire{.bytes = bytes,
              .input_names = encoded.input_names,
              .output_names = encoded.output_names,
              .is_target = parts.is_target,
              .is_target_explicit = parts.is_target_explicit};
  wire.set_type(bytes.substr(encoded.type_at, parts.type.size()));
  op.set_wire_op(wire, owner);
  return op;
}

namespace {

// Where the `index`th inputs field (OpDesc field 1) of encoded OpDesc bytes
// starts and ends.
std::pair<std::size_t, std::size_t> input_field_at(std::string_view bytes, std::size_t index) {
  wire::Reader r(bytes, 0);
  std::size_t seen = 0;
  while (!r.done()) {
    const std::size_t start = r.position();
    const wire::Tag tag = r.read_tag();
    r.skip_field(tag, start);
    if (tag.field == fl::op::kInputs && seen++ == index) return {start, r.position()};
  }
  throw Error("internal error: packed_op_copies: the op has no input slot " +
              std::to_string(index));
}

}  // namespace

// The bytes copies share and the runs of their own, in one allocation: the
// copies' one owner, which they point at through its shell (Op::wire_runs
// finds the shell there).
struct OpCopies::Shared {
  WireOpShell shell;
  std::unique_ptr<char[]> storage;
};

std::shared_ptr<const WireOpShell> OpCopies::shell() const {
  return std::shared_ptr<const WireOpShell>(shared_, &shared_->shell);
}

OpCopies::OpCopies() = default;
OpCopies::OpCopies(OpCopies&&) noexcept = default;
OpCopies& OpCopies::operator=(OpCopies&&) noexcept = default;
OpCopies::~OpCopies() = default;

std::size_t OpCopies::size() const { return shared_ ? own_ends_.size() : ops_.size(); }

std::string_view OpCopies::own(std::size_t i) const {
  const uint32_t from = i == 0 ? 0 : own_ends_[i - 1];
  return std::string_view(own_from_ + from, own_ends_[i] - from);
}

Op OpCopies::op(std::size_t i) const {
  if (!shared_) return ops_[i];
  Op op;
  op.type = type_;
  op.is_target = wire_.is_target;
  op.is_target_explicit = wire_.is_target_explicit;
  if (!attrs_.empty()) op.set_wire_attrs(attrs_);
  WireOp wire = wire_;
  wire.bytes = own(i);
  op.set_spliced_wire_op(wire, shell());
  return op;
}

WireRuns OpCopies::runs(std::size_t i) const {
  return WireRuns{{shared_->shell.before, own(i), shared_->shell.after}, 3};
}

OpCopies pack_op_copies(const OpParts& parts, std::size_t slot,
                        std::span<const std::string> vars) {
  if (slot >= parts.inputs.size())
    throw Error("internal error: packed_op_copies: no input slot " + std::to_string(slot));
  OpCopies copies;
  if (vars.empty()) return copies;
  if (parts.type.size() > WireOp::kMaxTypeSize || !parts.var_inputs.empty()) {
    std::vector<Slot> inputs(parts.inputs.begin(), parts.inputs.end());
    OpParts copy = parts;
    copy.inputs = inputs;
    copies.ops_.reserve(vars.size());
    for (const std::string& var : vars) {  // held decoded, or no shared run: one op each
      inputs[slot].args = {var};
      copies.ops_.push_back(packed_op(copy));
    }
    return copies;
  }
  // Encoded once; the slot's field, whatever `parts` gives it, is then cut
  // out, and each copy gets its own.
  const EncodedOp encoded = encode(parts, encode_scratch);
  const auto [cut_from, cut_to] = input_field_at(encoded.bytes, slot);
  const std::string_view before(encoded.bytes.data(), cut_from);
  const std::string_view after = std::string_view(encoded.bytes).substr(cut_to);
  // Each copy's own field (the slot naming its var), one after the other in
  // one buffer.
  std::string own;
  copies.own_ends_.reserve(vars.size());
  {
    wire::Writer w(own);
    for (const std::string& var : vars) {
      write_var_slot(w, fl::op::kInputs, parts.inputs[slot].name, var);
      copies.own_ends_.push_back(static_cast<uint32_t>(own.size()));
    }
  }
  auto shared = std::make_shared<OpCopies::Shared>();
  shared->storage = std::make_unique_for_overwrite<char[]>(before.size() + after.size() + own.size());
  char* at = shared->storage.get();
  auto keep = [&](std::string_view bytes) {
    std::memcpy(at, bytes.data(), bytes.size());
    const std::string_view kept(at, bytes.size());
    at += bytes.size();
    return kept;
  };
  shared->shell.before = keep(before);
  shared->shell.after = keep(after);
  copies.own_from_ = keep(own).data();
  copies.shared_ = std::move(shared);
  copies.type_ = std::string(parts.type);
  if (has_attrs(parts))
    copies.attrs_ = adopt_attrs(
        parts, encoded,
        copies.shared_->shell.after.substr(encoded.attrs_from - cut_to,
                                           encoded.attrs_to - encoded.attrs_from),
        copies.shell());
  copies.wire_ = WireOp{.input_names = encoded.input_names,
                        .output_names = encoded.output_names,
                        .type_at = static_cast<uint32_t>(encoded.type_at - cut_to),
                        .type_size = static_cast<uint16_t>(parts.type.size()),
                        .is_target = parts.is_target,
                        .is_target_explicit = parts.is_target_explicit};
  return copies;
}

std::vector<Op> packed_op_copies(const OpParts& parts, std::size_t slot,
                                 std::span<const std::string> vars) {
  const OpCopies copies = pack_op_copies(parts, slot, vars);
  std::vector<Op> ops;
  ops.reserve(copies.size());
  for (std::size_t i = 0; i < copies.size(); ++i) ops.push_back(copies.op(i));
  return ops;
}

Op packed_op(const Op& op) {
  // Unknown fields stay where they are: the reader keeps no op that has
  // them as its bytes either. Attributes kept as bytes whose names do not
  // lead would be written as they are, and the reader's notes assume names
  // lead.
  if (!op.unknown_fields.empty()) return op;
  const WireAttrs& wire = op.wire_attrs();
  if (!wire.empty() && !wire.names_lead) return op;
  OpParts parts{.type = op.type,
                .inputs = op.inputs(),
                .outputs = op.outputs(),
                .is_target = op.is_target,
                .is_target_explicit = op.is_target_explicit};
  if (wire.empty())
    parts.attrs = op.attrs();
  else
    parts.wire_attrs = &wire;
  return packed_op(parts);
}

}  // namespace ctp
