// Field numbers of framework.proto (the project's copy of the field table in
// ../shared/reference/PROGRAM_FORMAT.md), shared by the wire reader and writer.
#pragma once
#include <cstdint>

#include "program_ir/types.h"

namespace ctp::fields {

namespace program {
inline constexpr uint32_t kBlocks = 1, kOpCompatibleMap = 3, kVersion = 4, kOpVersionMap = 5;
}
namespace version {
inline constexpr uint32_t kVersion = 1;
}
namespace op_version_map {
inline constexpr uint32_t kPair = 1;
inline constexpr uint32_t kPairOpName = 1, kPairOpVersion = 2;  // OpVersionPair
inline constexpr uint32_t kOpVersionVersion = 1;                // OpVersion
}  // namespace op_version_map
namespace block {
inline constexpr uint32_t kIdx = 1, kParentIdx = 2, kVars = 3, kOps = 4, kForwardBlockIdx = 5;
}
namespace var {
inline constexpr uint32_t kName = 1, kType = 2, kPersistable = 3, kNeedCheckFeed = 4,
                          kIsParameter = 5, kStopGradient = 6, kAttrs = 7;
}
namespace var_attr {
inline constexpr uint32_t kName = 1, kType = 2, kI = 3, kS = 4, kInts = 5;
}
namespace var_type {
inline constexpr uint32_t kType = 1, kSelectedRows = 2, kLodTensor = 3, kTensorArray = 4,
                          kReader = 5, kTuple = 7, kString = 8, kStrings = 9, kVocab = 10,
                          kSparseCoo = 11, kSparseCsr = 12;
}
namespace reader_desc {
inline constexpr uint32_t kLodTensor = 1;
}
namespace tuple {
inline constexpr uint32_t kElementType = 1;
}
namespace tensor_desc {
inline constexpr uint32_t kDataType = 1, kDims = 2;
}
namespace lod_tensor_desc {  // LoDTensorDesc and LoDTensorArrayDesc
inline constexpr uint32_t kTensor = 1, kLodLevel = 2;
}
namespace op {
inline constexpr uint32_t kInputs = 1, kOutputs = 2, kType = 3, kAttrs = 4, kIsTarget = 5;
}
namespace op_slot {  // OpDesc.Var
inline constexpr uint32_t kParameter = 1, kArguments = 2;
}
namespace op_attr {
inline constexpr uint32_t kName = 1, kType = 2;
}

// The VarType field holding a var kind's tensor description, or 0. The
// LoD kinds (kind_has_lod_level) hold a LoDTensorDesc there, the others a
// TensorDesc. (Paddle's own VarDesc maps STRINGS, VOCAB and SPARSE_COO so;
// STRING and SPARSE_CSR have their like-named fields.)
inline uint32_t tensor_desc_field(VarKind kind) {
  switch (kind) {
    case VarKind::SELECTED_ROWS: return var_type::kSelectedRows;
    case VarKind::LOD_TENSOR: return var_type::kLodTensor;
    case VarKind::LOD_TENSOR_ARRAY: return var_type::kTensorArray;
    case VarKind::STRING: return var_type::kString;
    case VarKind::STRINGS: return var_type::kStrings;
    case VarKind::VOCAB: return var_type::kVocab;
    case VarKind::SPARSE_COO: return var_type::kSparseCoo;
    case VarKind::SPARSE_CSR: return var_type::kSparseCsr;
    default: return 0;
  }
}

// How an OpDesc.Attr stores the value of each AttrType.
enum class ValueKind { Int32, Int64, Bool, Float, Double, Bytes };
struct AttrValueField {
  uint32_t field;
  ValueKind kind;
  bool repeated;
  const char* name;  // the field's name in framework.proto, for messages
};

inline AttrValueField attr_value_field(AttrType type) {
  switch (type) {
    case AttrType::INT: return {3, ValueKind::Int32, false, "i"};
    case AttrType::FLOAT: return {4, ValueKind::Float, false, "f"};
    case AttrType::STRING: return {5, ValueKind::Bytes, false, "s"};
    case AttrType::INTS: return {6, ValueKind::Int32, true, "ints"};
    case AttrType::FLOATS: return {7, ValueKind::Float, true, "floats"};
    case AttrType::STRINGS: return {8, ValueKind::Bytes, true, "strings"};
    case AttrType::BOOLEAN: return {10, ValueKind::Bool, false, "b"};
    case AttrType::BOOLEANS: return {11, ValueKind::Bool, true, "bools"};
    case AttrType::BLOCK: return {12, ValueKind::Int32, false, "block_idx"};
    case AttrType::LONG: return {13, ValueKind::Int64, false, "l"};
    case AttrType::BLOCKS: return {14, ValueKind::Int32, true, "blocks_idx"};
    case AttrType::LONGS: return {15, ValueKind::Int64, true, "longs"};
    case AttrType::FLOAT64S: return {16, ValueKind::Double, true, "float64s"};
    case AttrType::VAR: return {17, ValueKind::Bytes, false, "var_name"};
    case AttrType::VARS: return {18, ValueKind::Bytes, true, "vars_name"};
    case AttrType::FLOAT64: return {19, ValueKind::Double, false, "float64"};
    case AttrType::SCALAR: return {20, ValueKind::Bytes, false, "scalar"};
    case AttrType::SCALARS: return {21, ValueKind::Bytes, true, "scalars"};
  }
  return {0, ValueKind::Int32, false, "?"};
}

// Whether `field` is one of OpDesc.Attr's value fields (3..8, 10..21).
inline bool is_attr_value_field(uint32_t field) {
  return (field >= 3 && field <= 8) || (field >= 10 && field <= 21);
}

}  // namespace ctp::fields
