// A variable declared in a block (framework.proto's VarDesc).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "program_ir/types.h"

namespace ctp {

// A VarDesc attribute other than the is_distributed flag ctp models itself;
// kept so that a round trip loses nothing.
struct VarAttr {
  std::string name;
  AttrType type = AttrType::INT;
  int32_t i = 0;
  std::string s;
  std::vector<int32_t> ints;
  bool operator==(const VarAttr&) const = default;
};

struct Var {
  // Do not rename a var in place: its block indexes it by name.
  std::string name;
  VarKind type = VarKind::LOD_TENSOR;
  DataType dtype = DataType::FP32;
  std::vector<int64_t> shape;  // -1 marks an unknown dimension
  int32_t lod_level = 0;
  bool persistable = false;
  bool need_check_feed = false;
  bool is_parameter = false;
  bool stop_gradient = false;
  // Paddle keeps this on the Python object; ctp stores it as a VarDesc attr.
  bool is_distributed = false;
  std::vector<VarAttr> attrs;
  // Wire bytes of fields unknown to ctp, in VarDesc and in its VarType.
  std::string unknown_fields;
  std::string type_unknown_fields;

  // Whether the VarType carries a TensorDesc (dtype, shape, lod_level).
  bool has_tensor_desc() const {
    return type == VarKind::LOD_TENSOR || type == VarKind::SELECTED_ROWS ||
           type == VarKind::LOD_TENSOR_ARRAY;
  }
  // Number of elements, or -1 when a dimension is unknown.
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) {
      if (d < 0) return -1;
      n *= d;
    }
    return n;
  }
  bool operator==(const Var&) const = default;
};

}  // namespace ctp
