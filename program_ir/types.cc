#include "program_ir/types.h"

#include <array>
#include <cstdint>

namespace ctp {
namespace {

constexpr std::array<std::string_view, 34> kVarKindNames = {
    "BOOL", "INT16", "INT32", "INT64", "FP16", "FP32", "FP64", "LOD_TENSOR",
    "SELECTED_ROWS", "FEED_MINIBATCH", "FETCH_LIST", "STEP_SCOPES",
    "LOD_RANK_TABLE", "LOD_TENSOR_ARRAY", "PLACE_LIST", "READER",
    "FETCH_VAR_LIST", "RAW", "TUPLE", "SIZE_T", "UINT8", "INT8", "BF16",
    "COMPLEX64", "COMPLEX128", "STRING", "STRINGS", "VOCAB", "FEED_LIST",
    "PSTRING", "SPARSE_COO", "SPARSE_CSR", "FP8_E4M3FN", "FP8_E5M2"};

constexpr std::array<std::string_view, 18> kAttrTypeNames = {
    "INT", "FLOAT", "STRING", "INTS", "FLOATS", "STRINGS", "BOOLEAN",
    "BOOLEANS", "BLOCK", "LONG", "BLOCKS", "LONGS", "FLOAT64S", "VAR", "VARS",
    "FLOAT64", "SCALAR", "SCALARS"};

template <typename Enum, std::size_t N>
std::optional<Enum> lookup(const std::array<std::string_view, N>& names,
                           std::string_view name) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<Enum>(i);
  return std::nullopt;
}

}  // namespace

std::string_view to_string(VarKind kind) {
  auto i = static_cast<std::size_t>(kind);
  return i < kVarKindNames.size() ? kVarKindNames[i] : "UNKNOWN_VAR_TYPE";
}

std::string_view to_string(DataType dtype) { return to_string(wire_kind_of(dtype)); }

std::string_view to_string(AttrType type) {
  auto i = static_cast<std::size_t>(type);
  return i < kAttrTypeNames.size() ? kAttrTypeNames[i] : "UNKNOWN_ATTR_TYPE";
}

std::optional<VarKind> var_kind_from_string(std::string_view name) {
  return lookup<VarKind>(kVarKindNames, name);
}

std::optional<AttrType> attr_type_from_string(std::string_view name) {
  return lookup<AttrType>(kAttrTypeNames, name);
}

bool is_valid_var_kind(int32_t value) {
  return value >= 0 && value < static_cast<int32_t>(kVarKindNames.size());
}

bool is_valid_attr_type(int32_t value) {
  return value >= 0 && value < static_cast<int32_t>(kAttrTypeNames.size());
}

std::optional<DataType> element_type_from_number(int64_t value) {
  if (value < 0 || value > INT32_MAX) return std::nullopt;
  const auto dtype = static_cast<DataType>(static_cast<int32_t>(value));
  if (element_size(dtype) == 0) return std::nullopt;
  return dtype;
}

std::size_t element_size(DataType dtype) {
  switch (dtype) {
    case DataType::BOOL: case DataType::UINT8: case DataType::INT8:
    case DataType::FP8_E4M3FN: case DataType::FP8_E5M2: return 1;
    case DataType::INT16: case DataType::FP16: case DataType::BF16: return 2;
    case DataType::INT32: case DataType::FP32: return 4;
    case DataType::INT64: case DataType::FP64: case DataType::SIZE_T:
    case DataType::COMPLEX64: return 8;
    case DataType::COMPLEX128: return 16;
    default: return 0;
  }
}

}  // namespace ctp
