// Reading OpDesc messages (proto_read_parts.h): type, slots, attributes
// (checked, then kept as their bytes when they are one run), is_target and
// unknown fields; read with an owner, the whole OpDesc is kept as a view.
#include <optional>

#include "program_ir/framework_fields.h"
#include "program_ir/op_role.h"
#include "program_ir/proto_read_parts.h"
#include "program_ir/wire_attrs.h"
#include "program_ir/wire_read.h"
#include "program_ir/wire_slots.h"

namespace ctp::proto_read {
namespace {

using namespace wire_read;
namespace fl = fields;

// Where an op's attributes lie in its OpDesc: one run of fields with nothing
// between them (as every protobuf library writes them) stays as wire bytes.
struct AttrFields {
  std::size_t from = 0, to = 0;
  uint32_t count = 0;
  bool one_run = true;
  bool names_lead = true;  // WireAttrs::names_lead
  // Where the first op_role and op_role_var start (WireAttrs::op_role_at).
  uint32_t op_role_at = WireAttrs::kAbsent;
  uint32_t op_role_var_at = WireAttrs::kAbsent;
  void add(std::size_t start, std::size_t end, bool name_leads, std::string_view name) {
    if (count == 0) from = start;
    else if (start != to) one_run = false;
    to = end;
    names_lead = names_lead && name_leads;
    ++count;
    const auto at = static_cast<uint32_t>(start - from);
    if (name == kOpRoleAttr && op_role_at == WireAttrs::kAbsent) op_role_at = at;
    if (name == kOpRoleVarAttr && op_role_var_at == WireAttrs::kAbsent) op_role_var_at = at;
  }
  // Offsets fit in WireAttrs' 32 bits (an op's attributes under 4 GiB).
  bool can_note_roles() const { return to - from < WireAttrs::kAbsent; }
};

// What an op read from `bytes` keeps of them.
WireOp wire_op_of(std::string_view bytes, std::string_view type_bytes,
                  const Op& op, uint32_t input_names, uint32_t output_names) {
  WireOp wire{.bytes = bytes,
              .input_names = input_names,
              .output_names = output_names,
              .is_target = op.is_target,
              .is_target_explicit = op.is_target_explicit};
  wire.set_type(type_bytes);
  return wire;
}

// The op's attributes, checked already: kept as their bytes when they are
// one run, else decoded (`r` reads the whole OpDesc again).
void keep_attrs(Op& op, Reader r, const AttrFields& fields, const InputOwner& input) {
  if (fields.count == 0) return;
  if (fields.one_run) {
    const std::string_view bytes = r.span(fields.from, fields.to);
    WireAttrs wire = input.owner ? WireAttrs{.fields = bytes, .owner = input.owner,
                                             .count = fields.count,
                                             .names_lead = fields.names_lead}
                                 : WireAttrs::copied(bytes, fields.count, fields.names_lead);
    if (fields.can_note_roles()) {
      wire.roles_noted = true;
      wire.op_role_at = fields.op_role_at;
      wire.op_role_var_at = fields.op_role_var_at;
      note_op_role_value(wire);
    }
    op.set_wire_attrs(std::move(wire));
    return;
  }
  std::vector<NamedAttribute>& attrs = op.mutable_attrs();
  attrs.reserve(fields.count);
  SourceLocation place;
  for_each_field(r, [&](const Tag& tag, std::size_t start) {
    if (tag.field != fl::op::kAttrs) {
      r.skip_field(tag, start);
      return;
    }
    attrs.push_back(parse_op_attr(nested(r, tag, start, "attrs"), place));
  });
}

}  // namespace

Op parse_op(Reader r, SourceLocation& place, const InputOwner& input) {
  Op op;
  bool has_type = false;
  // With an owner, slots are only checked here: the op keeps its OpDesc's
  // bytes and decodes them when asked (or below, if it cannot keep them).
  const bool keep_bytes = input.owner != nullptr;
  guarded(place, [&] {
    const Reader whole = r;
    Reader scan = r;
    std::string_view type_bytes;
    std::size_t input_count = 0, output_count = 0;
    for_each_field(scan, [&](const Tag& tag, std::size_t start) {
      if (tag.field == fl::op::kType) {
        type_bytes = read_bytes_field(scan, tag, start, "type");
        op.type = type_bytes;
        place.op_type = op.type;
        has_type = true;
        return;
      }
      input_count += tag.field == fl::op::kInputs;
      output_count += tag.field == fl::op::kOutputs;
      scan.skip_field(tag, start);
    });
    if (!keep_bytes) {
      op.mutable_inputs().reserve(input_count);
      op.mutable_outputs().reserve(output_count);
    }
    long inputs = 0, outputs = 0;
    uint32_t input_names = 0, output_names = 0;
    AttrFields attr_fields;
    std::size_t known = 0;
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::op::kInputs:
        case fl::op::kOutputs: {
          const bool is_input = tag.field == fl::op::kInputs;
          const char* side = is_input ? "input" : "output";
          place.slot_side = side;
          place.slot = is_input ? inputs++ : outputs++;
          Slot* slot = keep_bytes ? nullptr
                                  : &(is_input ? op.mutable_inputs() : op.mutable_outputs())
                                         .emplace_back();
          const std::string_view name =
              read_wire_slot(nested_at(r, tag, start, side, place), place, slot);
          (is_input ? input_names : output_names) |= slot_name_bit(name);
          place.slot_side.clear();
          place.slot = -1;
          break;
        }
        case fl::op::kType: r.read_bytes(); break;
        case fl::op::kAttrs: {
          // Checked here, so that an error names its place; kept below.
          place.attr = attr_fields.count;
          const bool name_leads =
              check_op_attr(nested_at(r, tag, start, "attrs", place), place);
          attr_fields.add(start, r.position(), name_leads, place.attr_name);
          leave_attr(place);
          break;
        }
        case fl::op::kIsTarget:
          op.is_target = read_varint_field(r, tag, start, "is_target") != 0;
          op.is_target_explicit = !op.is_target;
          break;
        default: op.unknown_fields.append(known, r.skip_field(tag, start)); return;
      }
      ++known;
    });
    op.unknown_fields.close(known);
    keep_attrs(op, whole, attr_fields, input);
    if (!keep_bytes) return;
    const std::string_view bytes = whole.span(0, whole.remaining());
    if (op.unknown_fields.empty() && attr_fields.one_run &&
        type_bytes.size() <= WireOp::kMaxTypeSize) {
      op.set_wire_op(wire_op_of(bytes, type_bytes, op, input_names, output_names), input.owner);
    } else {
      decode_wire_slots(bytes, op.mutable_inputs(), op.mutable_outputs());
    }
  });
  if (!has_type) fail(place, "OpDesc has no type (field 3)");
  return op;
}

}  // namespace ctp::proto_read
