#include "program_ir/wire_slots.h"

#include "program_ir/framework_fields.h"
#include "program_ir/wire_read.h"

namespace ctp {

using namespace wire_read;
namespace fl = fields;

void read_wire_slot(Reader r, const SourceLocation& place, Slot* out) {
  bool has_parameter = false;
  guarded(place, [&] {
    if (out) out->args.reserve(count_field(r, fl::op_slot::kArguments));
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      switch (tag.field) {
        case fl::op_slot::kParameter: {
          std::string_view name = read_bytes_field(r, tag, start, "parameter");
          if (out) out->name = name;
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

}  // namespace ctp
