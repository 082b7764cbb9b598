#include "program_ir/attribute.h"

namespace ctp {

std::size_t variant_index_for(AttrType type) {
  switch (type) {
    case AttrType::INT: case AttrType::BLOCK: return 0;
    case AttrType::FLOAT: return 1;
    case AttrType::STRING: case AttrType::VAR: case AttrType::SCALAR: return 2;
    case AttrType::INTS: case AttrType::BLOCKS: return 3;
    case AttrType::FLOATS: return 4;
    case AttrType::STRINGS: case AttrType::VARS: case AttrType::SCALARS: return 5;
    case AttrType::BOOLEAN: return 6;
    case AttrType::BOOLEANS: return 7;
    case AttrType::LONG: return 8;
    case AttrType::LONGS: return 9;
    case AttrType::FLOAT64S: return 10;
    case AttrType::FLOAT64: return 11;
  }
  throw Error("invalid attribute type " + std::to_string(static_cast<int>(type)));
}

Attribute::Attribute(AttrType type, AttrValue value)
    : type_(type), value_(std::move(value)) {
  if (value_.index() != variant_index_for(type_))
    throw Error("value does not fit attribute type " + std::string(to_string(type_)));
}

int64_t Attribute::as_int64() const {
  switch (type_) {
    case AttrType::INT: return std::get<int32_t>(value_);
    case AttrType::LONG: return std::get<int64_t>(value_);
    case AttrType::BOOLEAN: return std::get<bool>(value_) ? 1 : 0;
    default:
      throw Error("attribute of type " + std::string(to_string(type_)) +
                  " read as an integer");
  }
}

}  // namespace ctp
