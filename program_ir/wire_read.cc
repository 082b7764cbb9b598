#include "program_ir/wire_read.h"

namespace ctp::wire_read {

[[noreturn]] void fail(const SourceLocation& place, const std::string& message) {
  throw Error(place, message);
}

void expect_wire(const Reader& r, const Tag& tag, WireType want, std::size_t tag_start,
                 const char* name) {
  if (tag.type != want)
    throw WireFault(r.offset_at(tag_start),
                    "field " + std::to_string(tag.field) + " (" + name + ") has wire type " +
                        std::string(wire::to_string(tag.type)) + ", expected " +
                        std::string(wire::to_string(want)));
}

uint64_t read_varint_field(Reader& r, const Tag& tag, std::size_t start, const char* name) {
  expect_wire(r, tag, WireType::Varint, start, name);
  return r.read_varint();
}

std::string_view read_bytes_field(Reader& r, const Tag& tag, std::size_t start,
                                  const char* name) {
  expect_wire(r, tag, WireType::LengthDelimited, start, name);
  return r.read_bytes();
}

Reader nested(Reader& r, const Tag& tag, std::size_t start, const char* name) {
  std::string_view payload = read_bytes_field(r, tag, start, name);
  return Reader(payload, r.last_payload_offset());
}

Reader nested_at(Reader& r, const Tag& tag, std::size_t start, const char* name,
                 const SourceLocation& child) {
  return guarded(child, [&] { return nested(r, tag, start, name); });
}

[[noreturn]] void unknown_in(const Reader& r, const Tag& tag, std::size_t start,
                             const char* message_name) {
  throw WireFault(r.offset_at(start), "unknown field " + std::to_string(tag.field) + " in " +
                                          message_name + " (ctp has nowhere to keep it)");
}

VarKind read_var_kind(uint64_t raw, const SourceLocation& place, const char* what) {
  int32_t value = wire::as_int32(raw);
  if (!is_valid_var_kind(value))
    fail(place, std::string("invalid ") + what + " " + std::to_string(value));
  return static_cast<VarKind>(value);
}

AttrType read_attr_type(uint64_t raw, const SourceLocation& place) {
  int32_t value = wire::as_int32(raw);
  if (!is_valid_attr_type(value)) fail(place, "invalid AttrType " + std::to_string(value));
  return static_cast<AttrType>(value);
}

std::size_t count_field(Reader r, uint32_t field) {
  std::size_t n = 0;
  for_each_field(r, [&](const Tag& tag, std::size_t start) {
    n += tag.field == field;
    r.skip_field(tag, start);
  });
  return n;
}

}  // namespace ctp::wire_read
