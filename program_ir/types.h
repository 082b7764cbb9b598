// Enumerations of Paddle's framework.proto: variable types, data types and
// attribute types, with their wire numbers and the names used in JSON/text.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ctp {

// VarType.Type: the kind of a variable (LOD_TENSOR, RAW, FEED_MINIBATCH...).
// Paddle numbers element types in the same enum; ctp keeps them apart
// (DataType below) so that a var kind never type-checks as a dtype.
// Every value of Paddle's current framework.proto (which calls 7 and 13
// DENSE_TENSOR and DENSE_TENSOR_ARRAY) and Paddle 1.x's FETCH_VAR_LIST (16).
enum class VarKind : int32_t {
  BOOL = 0, INT16 = 1, INT32 = 2, INT64 = 3, FP16 = 4, FP32 = 5, FP64 = 6,
  LOD_TENSOR = 7, SELECTED_ROWS = 8, FEED_MINIBATCH = 9, FETCH_LIST = 10,
  STEP_SCOPES = 11, LOD_RANK_TABLE = 12, LOD_TENSOR_ARRAY = 13, PLACE_LIST = 14,
  READER = 15, FETCH_VAR_LIST = 16, RAW = 17, TUPLE = 18, SIZE_T = 19,
  UINT8 = 20, INT8 = 21, BF16 = 22, COMPLEX64 = 23, COMPLEX128 = 24,
  STRING = 25, STRINGS = 26, VOCAB = 27, FEED_LIST = 28, PSTRING = 29,
  SPARSE_COO = 30, SPARSE_CSR = 31, FP8_E4M3FN = 32, FP8_E5M2 = 33,
};
// The element type of a tensor, numbered as in VarType.Type (the wire
// value of TensorDesc.data_type and of dtype attributes). Only element types
// have names here; a TensorDesc that carries another VarType.Type number
// (no Paddle writer does, but the wire allows it) keeps that number so that a
// round trip loses nothing, and element_size() of it is 0. PSTRING (Paddle's
// string element, as in PaddleNLP's tokenizer programs) has no fixed size:
// element_size() is 0 for it too, so no kernel or dtype attribute takes it.
enum class DataType : int32_t {
  BOOL = 0, INT16 = 1, INT32 = 2, INT64 = 3, FP16 = 4, FP32 = 5, FP64 = 6,
  SIZE_T = 19, UINT8 = 20, INT8 = 21, BF16 = 22, COMPLEX64 = 23, COMPLEX128 = 24,
  PSTRING = 29, FP8_E4M3FN = 32, FP8_E5M2 = 33,
};

enum class AttrType : int32_t {
  INT = 0, FLOAT = 1, STRING = 2, INTS = 3, FLOATS = 4, STRINGS = 5,
  BOOLEAN = 6, BOOLEANS = 7, BLOCK = 8, LONG = 9, BLOCKS = 10, LONGS = 11,
  FLOAT64S = 12, VAR = 13, VARS = 14, FLOAT64 = 15, SCALAR = 16, SCALARS = 17,
};

std::string_view to_string(VarKind kind);
// An element type's name ("FP32"); another VarType.Type number read from the
// wire is named as that VarKind ("LOD_TENSOR").
std::string_view to_string(DataType dtype);
std::string_view to_string(AttrType type);
std::optional<VarKind> var_kind_from_string(std::string_view name);
std::optional<AttrType> attr_type_from_string(std::string_view name);
bool is_valid_var_kind(int32_t value);
bool is_valid_attr_type(int32_t value);

// The explicit conversions where Paddle's wire format mixes the two: a
// TensorDesc's data_type is a VarType.Type, read and written by number.
inline DataType data_type_of_wire_kind(VarKind kind) {
  return static_cast<DataType>(static_cast<int32_t>(kind));
}
inline VarKind wire_kind_of(DataType dtype) {
  return static_cast<VarKind>(static_cast<int32_t>(dtype));
}
// The element type a number names (a dtype attribute, Paddle's VarType.Type
// number); nullopt when it names no element type.
std::optional<DataType> element_type_from_number(int64_t value);

// Size in bytes of one element, or 0 for a number that is no element type.
std::size_t element_size(DataType dtype);

}  // namespace ctp
