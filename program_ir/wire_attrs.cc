// Reading OpDesc.Attr messages (wire_attrs.h), shared by the protobuf reader
// and by ops that keep their attributes as wire bytes.
#include "program_ir/wire_attrs.h"

#include <string>

#include "program_ir/framework_fields.h"
#include "program_ir/op_role.h"
#include "program_ir/scalar.h"
#include "program_ir/wire_read.h"

namespace ctp {

using namespace wire_read;
namespace fl = fields;

namespace {

AttrValue empty_value(AttrType type) {
  switch (variant_index_for(type)) {
    case 0: return int32_t{0};
    case 1: return 0.0f;
    case 2: return std::string();
    case 3: return std::vector<int32_t>();
    case 4: return std::vector<float>();
    case 5: return std::vector<std::string>();
    case 6: return false;
    case 7: return std::vector<bool>();
    case 8: return int64_t{0};
    case 9: return std::vector<int64_t>();
    case 10: return std::vector<double>();
    default: return 0.0;
  }
}

// Reads one occurrence of the attr's value field into `value`. Without
// `keep_bytes`, STRING, VAR, STRINGS and VARS values are only checked, not
// copied (SCALAR and SCALARS are kept: their bytes are checked as messages).
void read_attr_value(Reader& r, const Tag& tag, std::size_t start, AttrType type,
                     const fl::AttrValueField& vf, AttrValue& value, bool keep_bytes) {
  using K = fl::ValueKind;
  if (!vf.repeated) {
    switch (vf.kind) {
      case K::Int32: value = wire::as_int32(read_varint_field(r, tag, start, vf.name)); return;
      case K::Int64: value = wire::as_int64(read_varint_field(r, tag, start, vf.name)); return;
      case K::Bool: value = read_varint_field(r, tag, start, vf.name) != 0; return;
      case K::Float:
        expect_wire(r, tag, WireType::Fixed32, start, vf.name);
        value = read_float(r);
        return;
      case K::Double:
        expect_wire(r, tag, WireType::Fixed64, start, vf.name);
        value = read_double(r);
        return;
      case K::Bytes: {
        std::string_view bytes = read_bytes_field(r, tag, start, vf.name);
        if (!keep_bytes && type != AttrType::SCALAR) return;
        // A repeated message field merges, which for raw bytes is appending.
        if (type == AttrType::SCALAR)
          std::get<std::string>(value).append(bytes);
        else
          value = std::string(bytes);
        return;
      }
    }
  }
  switch (vf.kind) {
    case K::Int32:
      read_repeated(r, tag, start, vf.name, WireType::Varint, 0,
                    std::get<std::vector<int32_t>>(value), read_int32);
      return;
    case K::Int64:
      read_repeated(r, tag, start, vf.name, WireType::Varint, 0,
                    std::get<std::vector<int64_t>>(value), read_int64);
      return;
    case K::Bool:
      read_repeated(r, tag, start, vf.name, WireType::Varint, 0,
                    std::get<std::vector<bool>>(value), read_bool);
      return;
    case K::Float:
      read_repeated(r, tag, start, vf.name, WireType::Fixed32, 4,
                    std::get<std::vector<float>>(value), read_float);
      return;
    case K::Double:
      read_repeated(r, tag, start, vf.name, WireType::Fixed64, 8,
                    std::get<std::vector<double>>(value), read_double);
      return;
    case K::Bytes: {
      std::string_view bytes = read_bytes_field(r, tag, start, vf.name);
      if (keep_bytes || type == AttrType::SCALARS)
        std::get<std::vector<std::string>>(value).emplace_back(bytes);
      return;
    }
  }
}

// SCALAR and SCALARS values stay wire bytes (scalar.h); they must be Scalar
// messages. `at` is where the attr starts, for messages.
void check_scalars(AttrType type, const AttrValue& value, std::size_t at) {
  if (type == AttrType::SCALAR) decode_scalar(std::get<std::string>(value), at);
  if (type == AttrType::SCALARS)
    for (const std::string& scalar : std::get<std::vector<std::string>>(value))
      decode_scalar(scalar, at);
}

// One Attr message; without `keep`, its name and value are checked but
// neither is copied (the result is empty). `names_lead`, when given, is set
// to whether the name is the first field and the only name field.
NamedAttribute read_op_attr(Reader r, SourceLocation& place, bool keep,
                            bool* names_lead = nullptr) {
  std::string_view name;
  bool has_name = false;
  int name_fields = 0;
  bool name_first = false;
  std::optional<uint64_t> raw_type;
  return guarded(place, [&] {
    Reader scan = r;
    for_each_field(scan, [&](const Tag& tag, std::size_t start) {
      if (tag.field == fl::op_attr::kName) {
        name_first = name_first || start == 0;
        ++name_fields;
        name = read_bytes_field(scan, tag, start, "name");
        place.attr_name = name;
        has_name = true;
      } else if (tag.field == fl::op_attr::kType) {
        raw_type = read_varint_field(scan, tag, start, "type");
      } else {
        scan.skip_field(tag, start);
      }
    });
    if (!has_name) fail(place, "OpDesc.Attr has no name (field 1)");
    if (!raw_type) fail(place, "OpDesc.Attr has no type (field 2)");
    const AttrType type = read_attr_type(*raw_type, place);
    const fl::AttrValueField vf = fl::attr_value_field(type);
    AttrValue value = empty_value(type);
    bool has_value = false;
    for_each_field(r, [&](const Tag& tag, std::size_t start) {
      if (tag.field == fl::op_attr::kName || tag.field == fl::op_attr::kType) {
        r.skip_field(tag, start);
      } else if (tag.field == vf.field) {
        read_attr_value(r, tag, start, type, vf, value, keep);
        has_value = true;
      } else if (fl::is_attr_value_field(tag.field)) {
        throw WireFault(r.offset_at(start),
                        "attr of type " + std::string(to_string(type)) + " also sets field " +
                            std::to_string(tag.field) + " (a value of another type)");
      } else {
        unknown_in(r, tag, start, "OpDesc.Attr");
      }
    });
    if (!has_value && !vf.repeated)
      fail(place, "attr of type " + std::string(to_string(type)) + " has no value (field " +
                      vf.name + " = " + std::to_string(vf.field) + ")");
    check_scalars(type, value, r.offset_at(0));
    if (names_lead) *names_lead = name_first && name_fields == 1;
    if (!keep) return NamedAttribute{};
    return NamedAttribute{std::string(name), Attribute(type, std::move(value))};
  });
}

}  // namespace

NamedAttribute parse_op_attr(Reader r, SourceLocation& place) {
  return read_op_attr(r, place, true);
}

bool check_op_attr(Reader r, SourceLocation& place) {
  bool names_lead = false;
  read_op_attr(r, place, false, &names_lead);
  return names_lead;
}

namespace {

// The name of a checked Attr message: the last name field, as protobuf
// reads it; only the first field's when `names_lead` says it is the one.
std::string_view attr_name(Reader message, bool names_lead) {
  std::string_view name;
  if (names_lead) {
    message.read_tag();
    return message.read_bytes();
  }
  for_each_field(message, [&](const Tag& tag, std::size_t start) {
    if (tag.field == fl::op_attr::kName)
      name = message.read_bytes();
    else
      message.skip_field(tag, start);
  });
  return name;
}

// Calls on_attr(reader of the Attr message, its name) for each attribute of
// `wire` until it returns true.
template <typename OnAttr>
void find_in_wire(const WireAttrs& wire, OnAttr&& on_attr) {
  Reader r(wire.fields, 0);
  while (!r.done()) {
    r.read_tag();
    Reader message(r.read_bytes(), 0);
    if (on_attr(message, attr_name(message, wire.names_lead))) return;
  }
}

}  // namespace

std::vector<NamedAttribute> decode_wire_attrs(const WireAttrs& wire) {
  std::vector<NamedAttribute> attrs;
  attrs.reserve(wire.count);
  SourceLocation place;
  find_in_wire(wire, [&](Reader message, std::string_view) {
    attrs.push_back(parse_op_attr(message, place));
    return false;
  });
  return attrs;
}

namespace {

// The value of a checked Attr message whose type holds one varint (INT,
// BOOLEAN, BLOCK, LONG: op_role is one, and a transpile asks every op for
// it), read in one pass without parse_op_attr's checks, which the reader
// made; nullopt for the other types. The last occurrence of a field wins,
// as in protobuf; a checked message has no value field of another type.
std::optional<Attribute> decode_varint_attr(Reader message) {
  uint64_t raw_type = 0;
  uint64_t value = 0;
  for_each_field(message, [&](const Tag& tag, std::size_t start) {
    if (tag.field == fl::op_attr::kType) {
      raw_type = message.read_varint();
    } else if (tag.type == WireType::Varint && tag.field != fl::op_attr::kName) {
      value = message.read_varint();  // a varint value field: i, b, block_idx or l
    } else {
      message.skip_field(tag, start);
    }
  });
  switch (static_cast<AttrType>(raw_type)) {
    case AttrType::INT: return Attribute(wire::as_int32(value));
    case AttrType::BOOLEAN: return Attribute(value != 0);
    case AttrType::BLOCK: return Attribute(AttrType::BLOCK, wire::as_int32(value));
    case AttrType::LONG: return Attribute(wire::as_int64(value));
    default: return std::nullopt;
  }
}

// The value of a checked Attr message.
Attribute decode_attr_message(Reader message) {
  if (std::optional<Attribute> value = decode_varint_attr(message)) return *std::move(value);
  SourceLocation place;
  return parse_op_attr(message, place).value;
}

// Where the reader noted `name` to be (WireAttrs::roles_noted): the Attr
// field's offset or WireAttrs::kAbsent; nullopt for other names.
std::optional<uint32_t> noted_offset(const WireAttrs& wire, std::string_view name) {
  if (!wire.roles_noted) return std::nullopt;
  if (name == kOpRoleAttr) return wire.op_role_at;
  if (name == kOpRoleVarAttr) return wire.op_role_var_at;
  return std::nullopt;
}

}  // namespace

std::optional<Attribute> decode_wire_attr(const WireAttrs& wire, std::string_view name) {
  if (wire.op_role_kind != WireAttrs::RoleKind::kNotDecoded && name == kOpRoleAttr) {
    if (wire.op_role_kind == WireAttrs::RoleKind::kInt)
      return Attribute(static_cast<int32_t>(wire.op_role_value));
    return Attribute(wire.op_role_value);
  }
  if (const std::optional<uint32_t> at = noted_offset(wire, name)) {
    if (*at == WireAttrs::kAbsent) return std::nullopt;
    Reader r(wire.fields.substr(*at), 0);
    r.read_tag();
    return decode_attr_message(Reader(r.read_bytes(), 0));
  }
  std::optional<Attribute> found;
  find_in_wire(wire, [&](Reader message, std::string_view attr_name) {
    if (attr_name != name) return false;
    found = decode_attr_message(message);
    return true;
  });
  return found;
}

void note_op_role_value(WireAttrs& wire) {
  if (!wire.roles_noted || wire.op_role_at == WireAttrs::kAbsent) return;
  const std::optional<Attribute> role = decode_wire_attr(wire, kOpRoleAttr);
  if (role->type() == AttrType::INT) {
    wire.op_role_kind = WireAttrs::RoleKind::kInt;
    wire.op_role_value = role->get<int32_t>();
  } else if (role->type() == AttrType::LONG) {
    wire.op_role_kind = WireAttrs::RoleKind::kLong;
    wire.op_role_value = role->get<int64_t>();
  }
}

bool has_wire_attr(const WireAttrs& wire, std::string_view name) {
  if (const std::optional<uint32_t> at = noted_offset(wire, name))
    return *at != WireAttrs::kAbsent;
  bool found = false;
  find_in_wire(wire, [&](Reader, std::string_view attr_name) {
    found = attr_name == name;
    return found;
  });
  return found;
}

}  // namespace ctp
