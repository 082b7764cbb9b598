// A variable declared in a block (framework.proto's VarDesc).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "program_ir/heap_optional.h"
#include "program_ir/types.h"
#include "program_ir/unknown_fields.h"

namespace ctp {

// A VarDesc attribute. `i` and `s` are optional fields: absent is not 0 or
// "" on the wire.
struct VarAttr {
  std::string name;
  AttrType type = AttrType::INT;
  std::optional<int32_t> i;
  std::optional<std::string> s;
  std::vector<int32_t> ints;
  bool operator==(const VarAttr&) const = default;
};

// One element of a READER var's ReaderDesc (a LoDTensorDesc).
struct ReaderTensorDesc {
  DataType dtype = DataType::FP32;
  std::vector<int64_t> shape;
  std::optional<int32_t> lod_level;
  bool operator==(const ReaderTensorDesc&) const = default;
};

// The name of the VarDesc attr ctp keeps Var::is_distributed in.
inline constexpr const char* kIsDistributedAttr = "is_distributed";

// Whether a var kind's VarType has a tensor description (dtype and shape),
// and whether that description has a lod_level.
bool kind_has_tensor_desc(VarKind kind);
bool kind_has_lod_level(VarKind kind);

struct Var {
  // proto2 field presence: which optional fields of the VarDesc the file
  // wrote although they hold their default (Paddle writes `persistable:
  // false` for nearly every var), so that writing it again gives the same
  // bytes. A field that differs from its default is always written; readers
  // set a flag only for a field that holds its default, so that a Var reads
  // back equal to the one written.
  struct ExplicitDefaults {
    bool persistable = false;
    bool need_check_feed = false;
    bool is_parameter = false;
    bool stop_gradient = false;
    bool operator==(const ExplicitDefaults&) const = default;
  };

  // Do not rename a var in place: its block indexes it by name.
  std::string name;
  VarKind type = VarKind::LOD_TENSOR;
  // The tensor description of kinds that have one (kind_has_tensor_desc).
  DataType dtype = DataType::FP32;
  std::vector<int64_t> shape;  // -1 marks an unknown dimension
  // LoDTensorDesc.lod_level, an optional field (0 when absent).
  std::optional<int32_t> lod_level;
  // A var of a tensor kind saved without its description (PaddleFL's
  // control vars, a fetch list declared LOD_TENSOR_ARRAY): dtype, shape and
  // lod_level then hold their defaults and nothing is written for them.
  bool tensor_desc_absent = false;
  bool persistable = false;
  bool need_check_feed = false;
  bool is_parameter = false;
  bool stop_gradient = false;
  ExplicitDefaults explicit_defaults;
  // Paddle keeps this on the Python object; ctp stores it as the VarDesc
  // attr `is_distributed` (BOOLEAN, i = 1). The flag is what counts: an
  // `is_distributed` attr in `attrs` (where a file had one in another form
  // or place) is written holding the flag (written_attrs()).
  bool is_distributed = false;
  // The VarDesc attrs, in file order.
  std::vector<VarAttr> attrs;
  // VarType.reader (READER vars) and VarType.tuple's element types, when the
  // file has them (on the heap: nearly no var has them, and a program holds
  // one Var per variable).
  HeapOptional<std::vector<ReaderTensorDesc>> reader;
  HeapOptional<std::vector<VarKind>> tuple;
  // Fields unknown to ctp, in VarDesc and in its VarType. A tensor
  // description that does not belong to the var's kind is one of them.
  UnknownFields unknown_fields;
  UnknownFields type_unknown_fields;

  // Whether the VarType carries a tensor description (dtype, shape).
  bool has_tensor_desc() const { return kind_has_tensor_desc(type) && !tensor_desc_absent; }
  // Number of elements, or -1 when a dimension is unknown.
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) {
      if (d < 0) return -1;
      n *= d;
    }
    return n;
  }
  // The VarDesc attrs as ctp writes them: `attrs`, where an `is_distributed`
  // attr of type BOOLEAN or INT holds is_distributed (its other fields as they
  // were), and one more, {is_distributed, BOOLEAN, i: 1}, at the end when
  // is_distributed is set and no such attr holds it.
  std::vector<VarAttr> written_attrs() const;
  bool operator==(const Var&) const = default;
};

// Whether `attr` is the one that holds Var::is_distributed.
bool is_distributed_attr(const VarAttr& attr);

// For readers, once a VarDesc's attrs are in `var.attrs`: sets
// is_distributed from the first attr that holds it and returns that attr's
// value (nullopt when there is none). An attr exactly as written_attrs()
// adds one ({is_distributed, BOOLEAN, i: 1}, last) is dropped, the flag
// standing for it, so that a Var reads back equal to the one written.
std::optional<bool> read_is_distributed(Var& var);

}  // namespace ctp
