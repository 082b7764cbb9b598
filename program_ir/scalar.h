// The value of a SCALAR or SCALARS attribute: framework.proto's Scalar
// message. ctp keeps each value as its wire bytes (Attribute::scalar), so that
// it is written back exactly as read; this decodes and encodes those bytes
// for the checks, the JSON form and the text form.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ctp {

struct Scalar {
  enum class Type : int32_t { BOOLEAN = 1, LONG = 2, FLOAT64 = 3, COMPLEX128 = 4 };
  struct Complex {
    double r = 0;
    double i = 0;
  };
  // Every field is optional on the wire but `type`; absent is not 0.
  Type type = Type::LONG;
  std::optional<bool> b;
  std::optional<int64_t> i;
  std::optional<double> r;
  std::optional<Complex> c;
};

std::string_view to_string(Scalar::Type type);
std::optional<Scalar::Type> scalar_type_from_string(std::string_view name);

// Decodes a Scalar message. Malformed bytes, a missing required field (type,
// Complex's r and i) or a type outside the enum raise wire::WireFault, whose
// offset counts from `base` (where the bytes start in the whole input).
// Fields it does not know are skipped: the bytes keep them.
Scalar decode_scalar(std::string_view bytes, std::size_t base = 0);
// The bytes protobuf writes for `scalar`: fields in number order.
std::string encode_scalar(const Scalar& scalar);
// The decoded value when `bytes` are exactly what encode_scalar writes for
// it, so that the value alone gives them back; nullopt otherwise (another
// field order, unknown fields, malformed bytes).
std::optional<Scalar> canonical_scalar(std::string_view bytes);

}  // namespace ctp
