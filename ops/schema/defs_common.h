// What the op definition files (ops/schema/defs_*.cc) share: short constructors for
// slot and attribute tables, and the context their shape inference runs in.
#pragma once
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "ops/schema/op_def.h"

namespace ctp::defs {

// Slots: one var, a list of vars, optional (dispensable) one or list.
inline SlotDef one(std::string name) { return {std::move(name), false, false}; }
inline SlotDef many(std::string name) { return {std::move(name), true, false}; }
inline SlotDef optional_one(std::string name) { return {std::move(name), false, true}; }
inline SlotDef optional_many(std::string name) { return {std::move(name), true, true}; }

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

using Shape = std::vector<int64_t>;

// One op's shape inference: its vars in the block, its attributes with the
// definition's defaults, and errors that name the op and the var.
class InferContext {
 public:
  InferContext(const Op& op, Block& block, const std::vector<AttrDef>& attr_defs)
      : op_(op), block_(block), attr_defs_(attr_defs) {}

  const Op& op() const { return op_; }

  std::size_t input_count(std::string_view slot) const;
  std::size_t output_count(std::string_view slot) const;
  bool has_input(std::string_view slot) const { return input_count(slot) > 0; }
  bool has_output(std::string_view slot) const { return output_count(slot) > 0; }

  // The i-th var of an input slot; fails when the slot or the var is missing.
  const Var& input(std::string_view slot, std::size_t i = 0) const;
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

  // The op's attribute or the definition's default.
  const Attribute& attr(std::string_view name) const;
  int64_t int_attr(std::string_view name) const;
  bool bool_attr(std::string_view name) const;
  double float_attr(std::string_view name) const;
  // INTS or LONGS.
  Shape ints_attr(std::string_view name) const;
  // A dtype attribute (Paddle's VarType.Type number), checked to name an element type.
  DataType dtype_attr(std::string_view name) const;

  // "input X 'x'" / "output Out 'y'", for messages.
  std::string describe_input(std::string_view slot, std::size_t i = 0) const;

  [[noreturn]] void fail(const std::string& message) const;

 private:
  Var* output_var(std::string_view slot, std::size_t i);

  const Op& op_;
  Block& block_;
  const std::vector<AttrDef>& attr_defs_;
};

using InferBody = std::function<void(InferContext&)>;

// Wraps a body into an InferShapeFn that sees `attrs` as the op's defaults.
InferShapeFn make_infer(const std::vector<AttrDef>& attrs, InferBody body);
// Adds `def` with `body` (if any) as its shape inference.
void add_def(OpRegistry& registry, OpDef def, InferBody body = {});

// Shape helpers; -1 is an unknown dimension and stays unknown.
std::string shape_to_string(const Shape& shape);
int64_t product(const Shape& shape, std::size_t begin, std::size_t end);
// Two dims that must agree: the known one, or fails with `what`.
int64_t merge_dim(const InferContext& ctx, int64_t a, int64_t b, const std::string& what);
// Whether two shapes agree where both are known.
bool compatible(const Shape& a, const Shape& b);
// Normalizes a possibly negative axis into [0, rank); fails when out of range.
std::size_t normalize_axis(const InferContext& ctx, int64_t axis, std::size_t rank,
                           const std::string& what);

// The definition groups, one per file; each is registered at load time.
void add_tensor_op_defs(OpRegistry& registry);
void add_math_op_defs(OpRegistry& registry);
void add_nn_op_defs(OpRegistry& registry);
void add_optimizer_op_defs(OpRegistry& registry);
void add_collective_op_defs(OpRegistry& registry);

}  // namespace ctp::defs
