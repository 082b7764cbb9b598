// OpDesc.Var messages (an op's input and output slots) on the wire: checked
// where the reader meets them, so that errors name their place, and decoded
// then or, for an op that keeps its OpDesc as bytes (Op::set_wire_op), when
// its slots are first asked for.
#pragma once
#include <string_view>
#include <vector>

#include "program_ir/op.h"
#include "program_ir/source_location.h"
#include "program_ir/wire_format.h"

namespace ctp {

// One OpDesc.Var message: malformed bytes, a missing parameter or a field
// OpDesc.Var does not have raise ctp::Error naming `place`. Fills `out` when
// it is given; with nullptr only checks, copying nothing.
void read_wire_slot(wire::Reader r, const SourceLocation& place, Slot* out);

// The inputs (field 1) and outputs (field 2) of an OpDesc's bytes, in order,
// appended to `inputs` and `outputs`. The bytes must have been checked.
void decode_wire_slots(std::string_view op_desc, std::vector<Slot>& inputs,
                       std::vector<Slot>& outputs);
// Whether a checked OpDesc has an input (or output) slot called `name`,
// reading the slots' names only.
bool wire_has_slot(std::string_view op_desc, bool input, std::string_view name);

}  // namespace ctp
