// What the op registry knows of one op type: its input and output slots, its
// attributes with their types and defaults, and its shape/dtype inference.
// Kernels live apart (ops/kernel registry, one per device), so the transpilers
// and `ctp verify` need no kernels.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ops/schema/grad_maker.h"
#include "program_ir/attribute.h"
#include "program_ir/block.h"
#include "program_ir/name_hash.h"

namespace ctp {

struct SlotDef {
  std::string name;
  bool duplicable = false;   // takes a list of vars
  bool dispensable = false;  // may be absent or empty
  // An input the op's kernels read only for its dtype and shape, never its
  // elements (Paddle's NoNeedBufferVars: elementwise_add_grad's X and Y).
  // A step may free such a var's elements after their last other read and
  // keep its shape for this op (executor/var_release.h); the kernels read it
  // with KernelContext::shape_input, and KernelContext::input refuses it.
  bool shape_only = false;
};

struct AttrDef {
  std::string name;
  AttrType type = AttrType::INT;
  std::optional<Attribute> default_value;  // nullopt: the attribute is required
  // Other types Paddle has written this attribute with across versions (a
  // shape that was INTS before it became LONGS); `ctp verify` accepts them.
  std::vector<AttrType> also_accepted;

  bool accepts(AttrType t) const {
    if (t == type) return true;
    for (AttrType other : also_accepted)
      if (other == t) return true;
    return false;
  }
};

// Sets the shape and dtype of the op's output vars in `block` from its inputs
// and attributes; throws ctp::Error naming the op and var when they disagree.
using InferShapeFn = std::function<void(const Op& op, Block& block)>;

struct OpDef {
  std::string type;
  std::vector<SlotDef> inputs;
  std::vector<SlotDef> outputs;
  std::vector<AttrDef> attrs;
  InferShapeFn infer_shape;  // may be empty
  // How the backward pass makes this op's grad ops (ops/schema/grad_maker.h).
  GradMaker grad;

  const AttrDef* find_attr(std::string_view name) const;
  const SlotDef* find_input(std::string_view name) const;
  const SlotDef* find_output(std::string_view name) const;
  // Whether input slot `name` is declared shape_only.
  bool reads_only_shape_of(std::string_view name) const {
    const SlotDef* slot = find_input(name);
    return slot && slot->shape_only;
  }
};

class OpRegistry {
 public:
  // The process-wide registry every op definition adds itself to.
  static OpRegistry& global();
  void add(OpDef def);  // throws on a duplicate type
  const OpDef* find(std::string_view type) const;
  std::vector<std::string> types() const;
  // Attributes Paddle may put on any op (op_role, op_role_var, op_namescope,
  // op_callstack, op_device, with_quant_attr): accepted everywhere.
  static const AttrDef* common_attr(std::string_view name);
  // The attribute's declared type on that op, the common attributes included.
  const AttrDef* find_attr(std::string_view type, std::string_view attr) const;

 private:
  std::unordered_map<std::string, OpDef, NameHash, std::equal_to<>> defs_;
};

// Adds a group of op definitions to the global registry when the library is
// loaded: CTP_REGISTER_OP_DEFS(add_math_op_defs), where the function takes an
// OpRegistry&.
#define CTP_OP_DEFS_CONCAT2(a, b) a##b
#define CTP_OP_DEFS_CONCAT(a, b) CTP_OP_DEFS_CONCAT2(a, b)
#define CTP_REGISTER_OP_DEFS(fn)                                              \
  static const bool CTP_OP_DEFS_CONCAT(ctp_op_defs_registered_, __LINE__) = [] { \
    fn(::ctp::OpRegistry::global());                                          \
    return true;                                                              \
  }()

}  // namespace ctp
