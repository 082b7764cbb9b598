// Protocol-buffer wire primitives for the program loader and writer: a
// bounds-checked reader over a byte span and an appending writer.
//
// The reader never trusts a length or count from the input: every read is
// checked against the bytes actually present, and it allocates nothing.
// Malformed input raises WireFault (offset + reason); the message parsers
// turn it into a ctp::Error that names the block, op and attribute.
#pragma once
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <span>
#include <string>
#include <string_view>

namespace ctp::wire {

enum class WireType : uint32_t {
  Varint = 0, Fixed64 = 1, LengthDelimited = 2, StartGroup = 3, EndGroup = 4, Fixed32 = 5,
};

std::string_view to_string(WireType type);

// Malformed bytes at `offset` (counted from the start of the whole input).
class WireFault : public std::runtime_error {
 public:
  WireFault(std::size_t offset, const std::string& reason)
      : std::runtime_error(reason), offset_(offset) {}
  std::size_t offset() const { return offset_; }

 private:
  std::size_t offset_;
};

struct Tag {
  uint32_t field = 0;
  WireType type = WireType::Varint;
};

class Reader {
 public:
  // `base` is the offset of `bytes` inside the whole input, for messages.
  Reader(std::string_view bytes, std::size_t base) : bytes_(bytes), base_(base) {}

  bool done() const { return pos_ == bytes_.size(); }
  std::size_t offset() const { return base_ + pos_; }
  std::size_t remaining() const { return bytes_.size() - pos_; }

  // One-byte keys and varints (nearly all of a program's) are read here,
  // inline; longer or malformed ones in the out-of-line slow paths.
  Tag read_tag() {
    if (pos_ < bytes_.size()) {
      // Fields 1 to 15 of a valid wire type.
      const auto key = static_cast<uint8_t>(bytes_[pos_]);
      if (key < 0x80 && key >= 8 && (key & 7) <= 5) {
        ++pos_;
        return Tag{static_cast<uint32_t>(key >> 3), static_cast<WireType>(key & 7)};
      }
    }
    return read_tag_slow();
  }
  uint64_t read_varint() {
    if (pos_ < bytes_.size() && static_cast<uint8_t>(bytes_[pos_]) < 0x80)
      return static_cast<uint8_t>(bytes_[pos_++]);
    return read_varint_of_at_most(10, "varint");
  }
  uint32_t read_fixed32();
  uint64_t read_fixed64();
  // The payload of a length-delimited field; last_payload_offset() is where
  // it starts in the whole input.
  std::string_view read_bytes();
  std::size_t last_payload_offset() const { return last_payload_offset_; }

  // Skips the value of a field whose tag was just read (groups included) and
  // returns the whole field, tag and all, as it appears in the input.
  std::string_view skip_field(const Tag& tag, std::size_t tag_start);
  std::size_t position() const { return pos_; }
  std::size_t offset_at(std::size_t position) const { return base_ + position; }
  std::string_view span(std::size_t from, std::size_t to) const {
    return bytes_.substr(from, to - from);
  }

 private:
  [[noreturn]] void fail(const std::string& reason) const;
  Tag read_tag_slow();
  uint64_t read_varint_of_at_most(int max_bytes, const char* what);
  void skip_value(WireType type);

  std::string_view bytes_;
  std::size_t base_;
  std::size_t pos_ = 0;
  std::size_t last_payload_offset_ = 0;
};

// Decoders for the scalar types framework.proto uses, as protobuf reads them.
inline int32_t as_int32(uint64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }
inline int64_t as_int64(uint64_t v) { return static_cast<int64_t>(v); }
inline bool as_bool(uint64_t v) { return v != 0; }
inline float as_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline double as_double(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

// The bytes of `v` as a varint.
inline std::size_t varint_size(uint64_t v) {
  std::size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}
// Writes `v` as a varint at `at`, which has room for varint_size(v) bytes
// (10 at most); returns the byte after it.
inline char* put_varint(char* at, uint64_t v) {
  while (v >= 0x80) {
    *at++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *at++ = static_cast<char>(v);
  return at;
}

// framework.proto's scalar and bytes fields as protobuf encodes them, over
// an encoder's primitives: `Encoder` has tag(), varint(), fixed32(),
// fixed64() and raw(). Every writer of the wire format (Writer below, the
// program writer's write pass in proto_writer.cc) encodes fields through
// this one set.
template <class Encoder>
class FieldEncoder {
 public:
  // int32 fields are sign-extended to 64 bits, as protobuf writes them.
  void int32_field(uint32_t field, int32_t v) {
    self().tag(field, WireType::Varint);
    self().varint(static_cast<uint64_t>(static_cast<int64_t>(v)));
  }
  void int64_field(uint32_t field, int64_t v) {
    self().tag(field, WireType::Varint);
    self().varint(static_cast<uint64_t>(v));
  }
  void bool_field(uint32_t field, bool v) {
    self().tag(field, WireType::Varint);
    self().varint(v ? 1 : 0);
  }
  void float_field(uint32_t field, float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    self().tag(field, WireType::Fixed32);
    self().fixed32(bits);
  }
  void double_field(uint32_t field, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    self().tag(field, WireType::Fixed64);
    self().fixed64(bits);
  }
  void bytes_field(uint32_t field, std::string_view v) {
    self().tag(field, WireType::LengthDelimited);
    self().varint(v.size());
    self().raw(v);
  }
  // One bytes field whose value is `runs` one after the other.
  void bytes_field(uint32_t field, std::span<const std::string_view> runs) {
    std::size_t size = 0;
    for (std::string_view run : runs) size += run.size();
    self().tag(field, WireType::LengthDelimited);
    self().varint(size);
    for (std::string_view run : runs) self().raw(run);
  }

 private:
  Encoder& self() { return static_cast<Encoder&>(*this); }
};

// Appends protobuf encodings to a string. Nested messages are written in
// place: begin_message() leaves room for the length, end_message() fills it.
class Writer : public FieldEncoder<Writer> {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  void tag(uint32_t field, WireType type) {
    varint((static_cast<uint64_t>(field) << 3) | static_cast<uint32_t>(type));
  }
  void varint(uint64_t v) {
    char buf[10];
    out_.append(buf, static_cast<std::size_t>(put_varint(buf, v) - buf));
  }
  void fixed32(uint32_t v) {
    char buf[4];
    for (int i = 0; i < 4; ++i) buf[i] = static_cast<char>(v >> (8 * i));
    out_.append(buf, 4);
  }
  void fixed64(uint64_t v) {
    char buf[8];
    for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>(v >> (8 * i));
    out_.append(buf, 8);
  }
  void raw(std::string_view bytes) { out_.append(bytes); }

  // Returns the position where the message body starts.
  std::size_t begin_message(uint32_t field) {
    tag(field, WireType::LengthDelimited);
    out_.push_back('\0');  // one length byte; end_message() widens it if needed
    return out_.size();
  }
  void end_message(std::size_t body_start);

 private:
  std::string& out_;
};

}  // namespace ctp::wire
