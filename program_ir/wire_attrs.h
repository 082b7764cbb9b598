// Op attributes on the wire (OpDesc.Attr messages): reading one with errors
// that name its place, for the protobuf reader, and decoding the attributes
// an op keeps as wire bytes (Op::wire_attrs(), which the reader has checked).
#pragma once
#include <optional>
#include <string_view>
#include <vector>

#include "program_ir/op.h"
#include "program_ir/source_location.h"
#include "program_ir/wire_format.h"

namespace ctp {

// One OpDesc.Attr message; malformed bytes raise ctp::Error naming `place`
// (whose attr_name it sets).
NamedAttribute parse_op_attr(wire::Reader r, SourceLocation& place);
// The same checks, copying nothing: what the reader does for attributes an
// op keeps as wire bytes, so that decoding them later cannot fail. Returns
// whether the name is the message's first field and its only name field
// (WireAttrs::names_lead).
bool check_op_attr(wire::Reader r, SourceLocation& place);

// Every attribute of `wire`, in order.
std::vector<NamedAttribute> decode_wire_attrs(const WireAttrs& wire);
// The value of the first attribute called `name` (as Op::attr finds it), or
// nullopt; decodes no other attribute's value.
std::optional<Attribute> decode_wire_attr(const WireAttrs& wire, std::string_view name);
bool has_wire_attr(const WireAttrs& wire, std::string_view name);
// For the reader, once op_role's place is noted (WireAttrs::op_role_at):
// decodes its value into `wire` when it is an INT or LONG.
void note_op_role_value(WireAttrs& wire);

}  // namespace ctp
