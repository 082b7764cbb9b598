// What the op definition files (ops/schema/defs_*.cc) share: short constructors for
// slot and attribute tables, and the context their shape inference runs in.
#pragma once
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops/schema/op_def.h"
#include "ops/schema/op_context.h"
#include "ops/schema/shape_rules.h"

namespace ctp::defs {

// Slots: one var, a list of vars, optional (dispensable) one or list.
inline SlotDef one(std::string name) { return {std::move(name), false, false}; }
inline SlotDef many(std::string name) { return {std::move(name), true, false}; }
inline SlotDef optional_one(std::string name) { return {std::move(name), false, true}; }
inline SlotDef optional_many(std::string name) { return {std::move(name), true, true}; }
// An input slot the op's kernels read only for its dtype and shape:
// shape_only(one("X")) (SlotDef::shape_only).
inline SlotDef shape_only(SlotDef slot) {
  slot.shape_only = true;
  return slot;
}

// Attributes: with a default (its type is the default's), or required.
inline AttrDef attr(std::string name, Attribute default_value,
                    std::vector<AttrType> also_accepted = {}) {
  AttrType type = default_value.type();
  return {std::move(name), type, std::move(default_value), std::move(also_accepted)};
}
inline AttrDef required(std::string name, AttrType type,
                        std::vector<AttrType> also_accepted = {}) {
  return {std::move(name), type, std::nullopt, std::move(also_accepted)};
}
// Attribute defaults of list types, spelled out.
inline Attribute ints(std::vector<int32_t> v) { return Attribute(std::move(v)); }
inline Attribute longs(std::vector<int64_t> v) { return Attribute(std::move(v)); }
inline Attribute floats(std::vector<float> v) { return Attribute(std::move(v)); }
inline Attribute strings(std::vector<std::string> v) { return Attribute(std::move(v)); }

// One op's shape inference on the vars of a block: its inputs' declared
// shapes and dtypes, the outputs it sets, and (from OpContext) its
// attributes with the definition's defaults and errors naming its place.
class InferContext : public OpContext {
 public:
  InferContext(const Op& op, Block& block, const std::vector<AttrDef>& attr_defs)
      : OpContext(op, block, -1, &attr_defs), block_(block) {}

  // The i-th var of an input slot; fails when the slot or the var is missing.
  const Var& input(std::string_view slot, std::size_t i = 0) const;
  TensorMeta input_meta(std::string_view slot, std::size_t i = 0) const {
    return meta_of(input(slot, i));
  }
  // Sets the i-th output's shape and dtype; does nothing when the op leaves
  // that output out (a dispensable slot), fails when its var is undeclared.
  void set_output(std::string_view slot, std::size_t i, const Shape& shape, DataType dtype);
  void set_output(std::string_view slot, const Shape& shape, DataType dtype) {
    set_output(slot, 0, shape, dtype);
  }
  // Sets only the dtype, keeping the declared shape (dims known at run time).
  void set_output_dtype(std::string_view slot, DataType dtype);
  // Output i takes input i's shape and dtype, for every i of the output slot.
  void pass_through(std::string_view in_slot, std::string_view out_slot);

 private:
  Var* output_var(std::string_view slot, std::size_t i);

  Block& block_;
};

// A dispensable input's meta, or nullopt; pointer() gives the rules' form
// (null when absent): meta::clip(ctx, x, pointer(min), pointer(max)).
inline std::optional<TensorMeta> optional_meta(const InferContext& ctx, std::string_view slot) {
  if (!ctx.has_input(slot)) return std::nullopt;
  return ctx.input_meta(slot);
}
inline const TensorMeta* pointer(const std::optional<TensorMeta>& m) { return m ? &*m : nullptr; }

using InferBody = std::function<void(InferContext&)>;

// Wraps a body into an InferShapeFn that sees `attrs` as the op's defaults.
InferShapeFn make_infer(const std::vector<AttrDef>& attrs, InferBody body);
// Adds `def` with `body` (if any) as its shape inference and `grad` as its
// grad maker (grad_op(...) for the common form, GradMaker::none() for an op
// without a gradient; docs/extending.md).
void add_def(OpRegistry& registry, OpDef def, InferBody body = {}, GradMaker grad = {});

// The definition groups, one per file; each is registered at load time.
void add_tensor_op_defs(OpRegistry& registry);
void add_math_op_defs(OpRegistry& registry);
void add_nn_op_defs(OpRegistry& registry);
void add_activation_op_defs(OpRegistry& registry);
void add_shape_op_defs(OpRegistry& registry);
void add_nlp_op_defs(OpRegistry& registry);
void add_optimizer_op_defs(OpRegistry& registry);
void add_collective_op_defs(OpRegistry& registry);
void add_metrics_op_defs(OpRegistry& registry);
void add_amp_op_defs(OpRegistry& registry);
void add_attention_op_defs(OpRegistry& registry);

}  // namespace ctp::defs
