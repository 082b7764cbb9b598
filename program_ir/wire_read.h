// Reading framework.proto messages off the wire (proto_io.cc): typed reads
// of fields that check the wire type and turn malformed bytes into errors
// naming the place the reader is at.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "program_ir/error.h"
#include "program_ir/source_location.h"
#include "program_ir/types.h"
#include "program_ir/wire_format.h"

namespace ctp::wire_read {

using wire::Reader;
using wire::Tag;
using wire::WireFault;
using wire::WireType;

// The parser keeps one SourceLocation and sets its fields as it descends
// into a block, an op, a slot or an attribute, clearing them on the way out,
// so that no name is copied unless an error is reported.
[[noreturn]] void fail(const SourceLocation& place, const std::string& message);

// Runs `body`, turning malformed-bytes faults into errors that name `place`.
template <typename Body>
auto guarded(const SourceLocation& place, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const WireFault& e) {
    fail(place, std::string(e.what()) + " (at byte " + std::to_string(e.offset()) + ")");
  }
}

// Calls on_field(tag, tag_start) for each field; on_field consumes the value.
template <typename OnField>
void for_each_field(Reader& r, OnField&& on_field) {
  while (!r.done()) {
    std::size_t start = r.position();
    Tag tag = r.read_tag();
    on_field(tag, start);
  }
}

void expect_wire(const Reader& r, const Tag& tag, WireType want, std::size_t tag_start,
                 const char* name);
uint64_t read_varint_field(Reader& r, const Tag& tag, std::size_t start, const char* name);
std::string_view read_bytes_field(Reader& r, const Tag& tag, std::size_t start,
                                  const char* name);

// A nested message's reader; its offsets count from the start of the input.
Reader nested(Reader& r, const Tag& tag, std::size_t start, const char* name);
// The same, with truncation and the like reported at the nested message's
// own place (the op, the var) rather than its parent's.
Reader nested_at(Reader& r, const Tag& tag, std::size_t start, const char* name,
                 const SourceLocation& child);

// Repeated numbers arrive unpacked (one field per element) or packed.
template <typename T, typename ReadOne>
void read_repeated(Reader& r, const Tag& tag, std::size_t start, const char* name,
                   WireType element, std::size_t element_bytes, std::vector<T>& out,
                   ReadOne read_one) {
  if (tag.type == element) {
    out.push_back(read_one(r));
    return;
  }
  expect_wire(r, tag, WireType::LengthDelimited, start, name);
  std::string_view payload = r.read_bytes();
  Reader packed(payload, r.last_payload_offset());
  // Sized from the bytes present, but never to exactly the new total: a
  // field split into many packed runs would reallocate on every run, which
  // is quadratic (a 1 MB attribute of 170,000 one-float runs: minutes).
  if (element_bytes > 0) {
    const std::size_t needed = out.size() + payload.size() / element_bytes;
    if (needed > out.capacity()) out.reserve(std::max(needed, 2 * out.capacity()));
  }
  while (!packed.done()) out.push_back(read_one(packed));
}

// A field of a message that has no place for unknown fields.
[[noreturn]] void unknown_in(const Reader& r, const Tag& tag, std::size_t start,
                             const char* message_name);

// How many times `field` occurs in a message: a cheap pass (values are
// skipped, not decoded) that lets vectors be sized once.
std::size_t count_field(Reader r, uint32_t field);

inline int32_t read_int32(Reader& r) { return wire::as_int32(r.read_varint()); }
inline int64_t read_int64(Reader& r) { return wire::as_int64(r.read_varint()); }
inline bool read_bool(Reader& r) { return wire::as_bool(r.read_varint()); }
inline float read_float(Reader& r) { return wire::as_float(r.read_fixed32()); }
inline double read_double(Reader& r) { return wire::as_double(r.read_fixed64()); }

// For messages ctp keeps as their bytes (scalar.h, op_compatible_map.h):
// the decoded value when encoding it gives exactly `bytes` back, so that the
// value alone can stand for them; nullopt otherwise (another field order,
// unknown fields, malformed bytes).
template <typename Decode, typename Encode>
auto decode_if_canonical(std::string_view bytes, Decode decode, Encode encode)
    -> std::optional<decltype(decode(bytes))> {
  try {
    auto value = decode(bytes);
    if (encode(value) == bytes) return value;
  } catch (const WireFault&) {
  }
  return std::nullopt;
}

// Enum values outside framework.proto are errors.
VarKind read_var_kind(uint64_t raw, const SourceLocation& place, const char* what);
AttrType read_attr_type(uint64_t raw, const SourceLocation& place);

}  // namespace ctp::wire_read
