#include "program_ir/wire_format.h"

#include <array>

namespace ctp::wire {
namespace {

// Unknown groups nest; deeper nesting than this is treated as hostile.
constexpr std::size_t kMaxGroupDepth = 64;

}  // namespace

std::string_view to_string(WireType type) {
  switch (type) {
    case WireType::Varint: return "varint";
    case WireType::Fixed64: return "fixed64";
    case WireType::LengthDelimited: return "length-delimited";
    case WireType::StartGroup: return "start-group";
    case WireType::EndGroup: return "end-group";
    case WireType::Fixed32: return "fixed32";
  }
  return "invalid";
}

void Reader::fail(const std::string& reason) const { throw WireFault(offset(), reason); }

uint64_t Reader::read_varint_of_at_most(int max_bytes, const char* what) {
  // Most varints of a program (keys, lengths of names and attributes, enum
  // values, flags) are one byte: no loop for them.
  if (pos_ < bytes_.size() && static_cast<uint8_t>(bytes_[pos_]) < 0x80)
    return static_cast<uint8_t>(bytes_[pos_++]);
  const std::size_t start = pos_;
  uint64_t value = 0;
  for (int i = 0; i < max_bytes; ++i) {
    if (pos_ == bytes_.size()) fail("truncated " + std::string(what));
    auto byte = static_cast<uint8_t>(bytes_[pos_++]);
    const int shift = 7 * i;
    if (shift == 63 && byte > 1) fail(std::string(what) + " longer than 64 bits");
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  pos_ = start;
  fail(std::string(what) + " longer than " + std::to_string(max_bytes) + " bytes");
}

// A field key is a 32-bit varint, and protobuf reads it in at most 5 bytes:
// libprotobuf refuses a longer key even when its extra bytes are zero
// (found by fuzz_proto_vs_libprotobuf), so ctp does too.
Tag Reader::read_tag_slow() {
  std::size_t start = pos_;
  uint64_t key = read_varint_of_at_most(5, "field key");
  uint64_t field = key >> 3;
  auto type = static_cast<uint32_t>(key & 7);
  if (field == 0 || field > 0x1fffffff) {
    pos_ = start;
    fail("invalid field number " + std::to_string(field));
  }
  if (type > 5) {
    pos_ = start;
    fail("invalid wire type " + std::to_string(type) + " for field " + std::to_string(field));
  }
  return Tag{static_cast<uint32_t>(field), static_cast<WireType>(type)};
}

uint32_t Reader::read_fixed32() {
  if (remaining() < 4) fail("truncated fixed32");
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<uint8_t>(bytes_[pos_ + i])) << (8 * i);
  pos_ += 4;
  return v;
}

uint64_t Reader::read_fixed64() {
  if (remaining() < 8) fail("truncated fixed64");
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(bytes_[pos_ + i])) << (8 * i);
  pos_ += 8;
  return v;
}

std::string_view Reader::read_bytes() {
  const std::size_t length_at = offset();
  // Lengths are 32-bit sizes below 2 GiB, read in at most 5 bytes, as
  // libprotobuf reads them.
  uint64_t length = read_varint_of_at_most(5, "length");
  if (length > 0x7fffffff)
    throw WireFault(length_at, "length " + std::to_string(length) + " of 2 GiB or more");
  if (length > remaining())
    throw WireFault(length_at, "truncated: length " + std::to_string(length) + " exceeds the " +
                                   std::to_string(remaining()) + " bytes left");
  last_payload_offset_ = offset();
  std::string_view payload = bytes_.substr(pos_, static_cast<std::size_t>(length));
  pos_ += static_cast<std::size_t>(length);
  return payload;
}

void Reader::skip_value(WireType type) {
  switch (type) {
    case WireType::Varint: read_varint(); return;
    case WireType::Fixed64: read_fixed64(); return;
    case WireType::Fixed32: read_fixed32(); return;
    case WireType::LengthDelimited: read_bytes(); return;
    case WireType::StartGroup:
    case WireType::EndGroup: break;
  }
  fail("unexpected " + std::string(to_string(type)));
}

std::string_view Reader::skip_field(const Tag& tag, std::size_t tag_start) {
  if (tag.type == WireType::EndGroup) {
    pos_ = tag_start;
    fail("end-group for field " + std::to_string(tag.field) + " without a start");
  }
  if (tag.type != WireType::StartGroup) {
    skip_value(tag.type);
    return span(tag_start, pos_);
  }
  // Groups end at the matching end-group tag; nested groups are tracked on
  // a bounded stack rather than by recursion.
  std::array<uint32_t, kMaxGroupDepth> open{};
  std::size_t depth = 0;
  open[depth++] = tag.field;
  while (depth > 0) {
    if (done()) fail("truncated group for field " + std::to_string(open[depth - 1]));
    Tag inner = read_tag();
    if (inner.type == WireType::StartGroup) {
      if (depth == kMaxGroupDepth) fail("groups nested too deeply");
      open[depth++] = inner.field;
    } else if (inner.type == WireType::EndGroup) {
      if (inner.field != open[depth - 1])
        fail("end-group for field " + std::to_string(inner.field) + " closes group " +
             std::to_string(open[depth - 1]));
      --depth;
    } else {
      skip_value(inner.type);
    }
  }
  return span(tag_start, pos_);
}

void Writer::end_message(std::size_t body_start) {
  const std::size_t length = out_.size() - body_start;
  char buf[10];
  const auto n = static_cast<std::size_t>(put_varint(buf, length) - buf);
  // One byte was reserved; longer lengths shift the body right.
  if (n > 1) out_.insert(body_start, n - 1, '\0');
  out_.replace(body_start - 1, n, buf, n);
}

}  // namespace ctp::wire
