// What an op's rules and its kernels share about one op: its slots' var
// names, its attributes read with the schema's defaults, and its place for
// error messages. The schema's shape inference (defs::InferContext, on the
// vars of a block) and every kernel (KernelContext, on tensors) are
// OpContexts, so an op's rules (ops/schema/meta_*.h) are written once and
// give both the same answers and the same error text.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops/schema/op_def.h"
#include "program_ir/block.h"
#include "program_ir/error.h"
#include "program_ir/source_location.h"

namespace ctp {

using Shape = std::vector<int64_t>;

// What an op's rules see of one input: a declared var's shape (-1 marks an
// unknown dim) and dtype, or a tensor's.
struct TensorMeta {
  const Shape& shape;
  DataType dtype;
};
inline TensorMeta meta_of(const Var& v) { return {v.shape, v.dtype}; }

class OpContext {
 public:
  // `op` lives in `block`; `op_index`, its position there (-1: found when an
  // error needs it), only serves error messages. `attr_defaults`: the schema
  // attributes whose defaults apply; null looks the op's type up in
  // OpRegistry::global() on first use.
  OpContext(const Op& op, const Block& block, int64_t op_index = -1,
            const std::vector<AttrDef>* attr_defaults = nullptr)
      : op_(op), block_(block), op_index_(op_index), attr_defaults_(attr_defaults) {}

  const Op& op() const { return op_; }
  const Block& block() const { return block_; }
  // The op's position in its block as given, -1 when unknown.
  int64_t op_index() const { return op_index_; }

  // Argument names of a slot; empty when the slot is absent.
  const std::vector<std::string>& input_names(std::string_view slot) const;
  const std::vector<std::string>& output_names(std::string_view slot) const;
  std::size_t input_count(std::string_view slot) const { return input_names(slot).size(); }
  std::size_t output_count(std::string_view slot) const { return output_names(slot).size(); }
  bool has_input(std::string_view slot) const { return !input_names(slot).empty(); }
  bool has_output(std::string_view slot) const { return !output_names(slot).empty(); }
  // "input X 'x'", for messages.
  std::string describe_input(std::string_view slot, std::size_t i = 0) const;
  // The op type's schema in OpRegistry::global() (looked up once), null when
  // it has none.
  const OpDef* schema() const;

  // Attributes: the op's value, else the schema's default (the attributes
  // Paddle puts on any op included), read leniently across the types Paddle
  // writers use for one attribute (INT/LONG/BOOLEAN, FLOAT/FLOAT64,
  // INTS/LONGS). When neither the op nor the schema has the attribute, the
  // readers return `fallback` if one is given and fail otherwise; a value of
  // any other type fails. This is the one way ctp reads attributes.
  const Attribute* find_attr(std::string_view name) const;
  const Attribute& attr(std::string_view name) const;
  int64_t int_attr(std::string_view name, std::optional<int64_t> fallback = std::nullopt) const;
  double float_attr(std::string_view name, std::optional<double> fallback = std::nullopt) const;
  bool bool_attr(std::string_view name, std::optional<bool> fallback = std::nullopt) const;
  std::string string_attr(std::string_view name,
                          std::optional<std::string> fallback = std::nullopt) const;
  std::vector<int64_t> ints_attr(std::string_view name,
                                 std::optional<std::vector<int64_t>> fallback = std::nullopt) const;
  std::vector<std::string> strings_attr(
      std::string_view name, std::optional<std::vector<std::string>> fallback = std::nullopt) const;
  // A dtype attribute (Paddle's VarType.Type number), checked to name an
  // element type; a negative value (Paddle's "as the input") or an absent
  // attribute gives `fallback` when there is one.
  DataType dtype_attr(std::string_view name,
                      std::optional<DataType> fallback = std::nullopt) const;

  // This op's place ("block 0, op 3 'mul'"), which every error of its rules
  // and kernels carries: error() makes one, fail() throws it.
  SourceLocation location() const;
  Error error(std::string message) const;
  [[noreturn]] void fail(std::string message) const;

 private:
  const Attribute* typed_attr(std::string_view name, bool has_fallback) const;
  [[noreturn]] void fail_type(std::string_view name, const Attribute& a,
                              const char* expected) const;

  const Op& op_;
  const Block& block_;
  int64_t op_index_;
  mutable const std::vector<AttrDef>* attr_defaults_;
  mutable bool defaults_looked_up_ = false;
  mutable const OpDef* schema_ = nullptr;
  mutable bool schema_looked_up_ = false;
};

}  // namespace ctp
