#include "program_ir/scalar.h"

#include <array>

#include "program_ir/wire_format.h"
#include "program_ir/wire_read.h"

namespace ctp {
namespace {

using namespace wire_read;

constexpr std::array<std::string_view, 4> kTypeNames = {"BOOLEAN", "LONG", "FLOAT64",
                                                        "COMPLEX128"};

// Scalar's and Complex's field numbers.
constexpr uint32_t kType = 1, kB = 2, kI = 3, kR = 4, kC = 5;
constexpr uint32_t kComplexR = 1, kComplexI = 2;

double read_double_field(Reader& r, const Tag& tag, std::size_t start, const char* name) {
  expect_wire(r, tag, WireType::Fixed64, start, name);
  return read_double(r);
}

// A singular message field that occurs twice merges: its fields overwrite.
void merge_complex(Reader r, Scalar::Complex& c, bool& has_r, bool& has_i) {
  for_each_field(r, [&](const Tag& tag, std::size_t start) {
    if (tag.field == kComplexR) {
      c.r = read_double_field(r, tag, start, "r");
      has_r = true;
    } else if (tag.field == kComplexI) {
      c.i = read_double_field(r, tag, start, "i");
      has_i = true;
    } else {
      r.skip_field(tag, start);
    }
  });
}

}  // namespace

std::string_view to_string(Scalar::Type type) {
  const auto i = static_cast<std::size_t>(type) - 1;
  return i < kTypeNames.size() ? kTypeNames[i] : "UNKNOWN_SCALAR_TYPE";
}

std::optional<Scalar::Type> scalar_type_from_string(std::string_view name) {
  for (std::size_t i = 0; i < kTypeNames.size(); ++i)
    if (kTypeNames[i] == name) return static_cast<Scalar::Type>(i + 1);
  return std::nullopt;
}

Scalar decode_scalar(std::string_view bytes, std::size_t base) {
  Scalar s;
  Reader r(bytes, base);
  bool has_type = false, has_r = false, has_i = false;
  Scalar::Complex complex;
  for_each_field(r, [&](const Tag& tag, std::size_t start) {
    switch (tag.field) {
      case kType: {
        const uint64_t raw = read_varint_field(r, tag, start, "type");
        const int32_t value = wire::as_int32(raw);
        if (value < 1 || value > static_cast<int32_t>(kTypeNames.size()))
          throw WireFault(r.offset_at(start), "invalid Scalar.Type " + std::to_string(value));
        s.type = static_cast<Scalar::Type>(value);
        has_type = true;
        break;
      }
      case kB: s.b = read_varint_field(r, tag, start, "b") != 0; break;
      case kI: s.i = wire::as_int64(read_varint_field(r, tag, start, "i")); break;
      case kR: s.r = read_double_field(r, tag, start, "r"); break;
      case kC: {
        merge_complex(nested(r, tag, start, "c"), complex, has_r, has_i);
        s.c = complex;
        break;
      }
      default: r.skip_field(tag, start);
    }
  });
  if (!has_type) throw WireFault(base, "Scalar has no type (field 1)");
  if (s.c && !(has_r && has_i))
    throw WireFault(base, std::string("Scalar.c (Complex) has no ") + (has_r ? "i" : "r") +
                              " (field " + (has_r ? "2" : "1") + ")");
  return s;
}

std::string encode_scalar(const Scalar& scalar) {
  std::string out;
  wire::Writer w(out);
  w.int32_field(kType, static_cast<int32_t>(scalar.type));
  if (scalar.b) w.bool_field(kB, *scalar.b);
  if (scalar.i) w.int64_field(kI, *scalar.i);
  if (scalar.r) w.double_field(kR, *scalar.r);
  if (scalar.c) {
    const std::size_t body = w.begin_message(kC);
    w.double_field(kComplexR, scalar.c->r);
    w.double_field(kComplexI, scalar.c->i);
    w.end_message(body);
  }
  return out;
}

std::optional<Scalar> canonical_scalar(std::string_view bytes) {
  return decode_if_canonical(
      bytes, [](std::string_view b) { return decode_scalar(b); }, encode_scalar);
}

}  // namespace ctp
