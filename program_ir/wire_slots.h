// OpDesc.Var messages (an op's input and output slots) on the wire: checked
// where the reader meets them, so that errors name their place, and decoded
// then or, for an op that keeps its OpDesc as bytes (Op::set_wire_op), when
// its slots are first asked for.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "program_ir/op.h"
#include "program_ir/source_location.h"
#include "program_ir/wire_format.h"

namespace ctp {

// One OpDesc.Var message: malformed bytes, a missing parameter or a field
// OpDesc.Var does not have raise ctp::Error naming `place`. Fills `out` when
// it is given; with nullptr only checks, copying nothing. Returns the slot's
// name (its last parameter field, as protobuf reads it), a view of `r`'s bytes.
std::string_view read_wire_slot(wire::Reader r, const SourceLocation& place, Slot* out);

// The bit a slot called `name` sets in WireOp::input_names/output_names.
uint32_t slot_name_bit(std::string_view name);

// The inputs (field 1) and outputs (field 2) of an OpDesc's bytes, in order,
// appended to `inputs` and `outputs`. The bytes must have been checked.
void decode_wire_slots(std::string_view op_desc, std::vector<Slot>& inputs,
                       std::vector<Slot>& outputs);
// Whether a checked OpDesc has an input (or output) slot called `name`,
// reading the slots' names only.
bool wire_has_slot(std::string_view op_desc, bool input, std::string_view name);
// The arguments of a checked OpDesc's first input (or output) slot called
// `name`, reading that slot only; nullopt when it has none.
std::optional<std::vector<std::string>> wire_slot_args(std::string_view op_desc, bool input,
                                                       std::string_view name);

}  // namespace ctp
