// A typed op attribute: one of framework.proto's AttrTypes and its value.
// The type is kept beside the value because several types share a C++
// representation (INT and BLOCK, STRING and VAR, INTS and BLOCKS, ...).
#pragma once
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "program_ir/error.h"
#include "program_ir/types.h"

namespace ctp {

using AttrValue =
    std::variant<int32_t, float, std::string, std::vector<int32_t>,
                 std::vector<float>, std::vector<std::string>, bool,
                 std::vector<bool>, int64_t, std::vector<int64_t>,
                 std::vector<double>, double>;

class Attribute {
 public:
  Attribute() : type_(AttrType::INT), value_(int32_t{0}) {}
  // Builds an attribute of an explicit type; throws if the value's C++ type
  // cannot hold that AttrType.
  Attribute(AttrType type, AttrValue value);

  // Natural mappings of C++ values to AttrTypes.
  Attribute(int32_t v) : type_(AttrType::INT), value_(v) {}
  Attribute(float v) : type_(AttrType::FLOAT), value_(v) {}
  Attribute(double v) : type_(AttrType::FLOAT64), value_(v) {}
  Attribute(bool v) : type_(AttrType::BOOLEAN), value_(v) {}
  Attribute(int64_t v) : type_(AttrType::LONG), value_(v) {}
  Attribute(const char* v) : type_(AttrType::STRING), value_(std::string(v)) {}
  Attribute(std::string v) : type_(AttrType::STRING), value_(std::move(v)) {}
  Attribute(std::vector<int32_t> v) : type_(AttrType::INTS), value_(std::move(v)) {}
  Attribute(std::vector<float> v) : type_(AttrType::FLOATS), value_(std::move(v)) {}
  Attribute(std::vector<std::string> v)
      : type_(AttrType::STRINGS), value_(std::move(v)) {}
  Attribute(std::vector<bool> v) : type_(AttrType::BOOLEANS), value_(std::move(v)) {}
  Attribute(std::vector<int64_t> v) : type_(AttrType::LONGS), value_(std::move(v)) {}
  Attribute(std::vector<double> v)
      : type_(AttrType::FLOAT64S), value_(std::move(v)) {}

  static Attribute block(int32_t block_idx) { return {AttrType::BLOCK, block_idx}; }
  static Attribute blocks(std::vector<int32_t> idx) { return {AttrType::BLOCKS, std::move(idx)}; }
  static Attribute var(std::string name) { return {AttrType::VAR, std::move(name)}; }
  static Attribute vars(std::vector<std::string> names) {
    return {AttrType::VARS, std::move(names)};
  }
  // SCALAR holds the serialized Scalar message; SCALARS one string per message.
  static Attribute scalar(std::string raw) { return {AttrType::SCALAR, std::move(raw)}; }
  static Attribute scalars(std::vector<std::string> raw) {
    return {AttrType::SCALARS, std::move(raw)};
  }

  AttrType type() const { return type_; }
  const AttrValue& value() const { return value_; }

  // Typed access; throws ctp::Error naming both types on a mismatch.
  template <typename T>
  const T& get() const {
    if (const T* p = std::get_if<T>(&value_)) return *p;
    throw Error("attribute of type " + std::string(to_string(type_)) +
                " read as another type");
  }
  // Integer value of INT, LONG or BOOLEAN attributes (op_role is INT in
  // Paddle but some writers use LONG).
  int64_t as_int64() const;

  bool operator==(const Attribute& other) const = default;

 private:
  AttrType type_;
  AttrValue value_;
};

// Which variant alternative an AttrType is stored in.
std::size_t variant_index_for(AttrType type);

struct NamedAttribute {
  std::string name;
  Attribute value;
  bool operator==(const NamedAttribute&) const = default;
};

}  // namespace ctp
