#include "program_ir/wire_slots.h"

#include <optional>
#include <string>
#include <utility>

#include "program_ir/framework_fields.h"
#include "program_ir/wire_read.h"

namespace ctp {

using namespace wire_read;
namespace fl = fields;

uint32_t slot_name_bit(std::string_view name) {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a
  for (char c : name) hash = (hash ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return uint32_t{1} << (hash >> 59);
}

std::string_view read_wire_slot(Reader r, const SourceLocation& place, Slot* out) {
  bool has_parameter = false;
  std::string_view slot_name;
  guarded(place, [&] {
    if (out) out->args.reserve(count_field(r, fl::op_slot::kArguments));
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::op_slot::kParameter: {
          slot_name = read_bytes_field(r, tag, start, "parameter");
          if (out) out->name = slot_name;
          has_parameter = true;
          break;
        }
        case fl::op_slot::kArguments: {
          std::string_view arg = read_bytes_field(r, tag, start, "arguments");
          if (out) out->args.emplace_back(arg);
          break;
        }
        default: unknown_in(r, tag, start, "OpDesc.Var");
      }
    });
  });
  if (!has_parameter) fail(place, "OpDesc.Var has no parameter (field 1)");
  return slot_name;
}

void decode_wire_slots(std::string_view op_desc, std::vector<Slot>& inputs,
                       std::vector<Slot>& outputs) {
  const SourceLocation place;  // the bytes were checked: nothing fails here
  Reader r(op_desc, 0);
  for_each_field(r, [&](const Tag& tag, std::size_t start) {
    if (tag.field != fl::op::kInputs && tag.field != fl::op::kOutputs) {
      r.skip_field(tag, start);
      return;
    }
    std::vector<Slot>& side = tag.field == fl::op::kInputs ? inputs : outputs;
    read_wire_slot(nested(r, tag, start, "slot"), place, &side.emplace_back());
  });
}

namespace {

// The first input (or output) slot called `name` of a checked OpDesc: its
// OpDesc.Var message's bytes.
std::optional<std::string_view> find_wire_slot(std::string_view op_desc, bool input,
                                               std::string_view name) {
  const uint32_t side = input ? fl::op::kInputs : fl::op::kOutputs;
  Reader r(op_desc, 0);
  while (!r.done()) {
    const std::size_t start = r.position();
    const Tag tag = r.read_tag();
    if (tag.field != side) {
      r.skip_field(tag, start);
      continue;
    }
    // A checked OpDesc.Var has one or more parameter fields; the last is
    // its name, as protobuf reads it.
    const std::string_view message = r.read_bytes();
    Reader slot(message, 0);
    std::string_view slot_name;
    while (!slot.done()) {
      const std::size_t slot_start = slot.position();
      const Tag slot_tag = slot.read_tag();
      if (slot_tag.field == fl::op_slot::kParameter)
        slot_name = slot.read_bytes();
      else
        slot.skip_field(slot_tag, slot_start);
    }
    if (slot_name == name) return message;
  }
  return std::nullopt;
}

}  // namespace

bool wire_has_slot(std::string_view op_desc, bool input, std::string_view name) {
  return find_wire_slot(op_desc, input, name).has_value();
}

std::optional<std::vector<std::string>> wire_slot_args(std::string_view op_desc, bool input,
                                                       std::string_view name) {
  const std::optional<std::string_view> message = find_wire_slot(op_desc, input, name);
  if (!message) return std::nullopt;
  Slot slot;
  read_wire_slot(Reader(*message, 0), SourceLocation{}, &slot);
  return std::move(slot.args);
}

}  // namespace ctp
