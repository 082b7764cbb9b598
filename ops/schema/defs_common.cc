#include "ops/schema/defs_common.h"

#include <cstdint>
#include <memory>

namespace ctp::defs {
namespace {

const std::vector<std::string>* slot_args(const std::vector<Slot>& slots, std::string_view name) {
  for (const Slot& s : slots)
    if (s.name == name) return &s.args;
  return nullptr;
}

}  // namespace

std::size_t InferContext::input_count(std::string_view slot) const {
  const auto* args = slot_args(op_.inputs, slot);
  return args ? args->size() : 0;
}

std::size_t InferContext::output_count(std::string_view slot) const {
  const auto* args = slot_args(op_.outputs, slot);
  return args ? args->size() : 0;
}

std::string InferContext::describe_input(std::string_view slot, std::size_t i) const {
  const auto* args = slot_args(op_.inputs, slot);
  std::string s = "input " + std::string(slot);
  if (args && i < args->size()) s += " '" + (*args)[i] + "'";
  return s;
}

const Var& InferContext::input(std::string_view slot, std::size_t i) const {
  const auto* args = slot_args(op_.inputs, slot);
  if (!args || i >= args->size())
    fail("input slot " + std::string(slot) + " has no var #" + std::to_string(i));
  const std::string& name = (*args)[i];
  const Var* var = block_.find_var(name);
  if (!var)
    fail(describe_input(slot, i) + " is not declared in block " + std::to_string(block_.idx));
  return *var;
}

Var* InferContext::output_var(std::string_view slot, std::size_t i) {
  const auto* args = slot_args(op_.outputs, slot);
  if (!args || i >= args->size()) return nullptr;
  const std::string& name = (*args)[i];
  Var* var = block_.find_var(name);
  if (!var)
    fail("output " + std::string(slot) + " '" + name + "' is not declared in block " +
         std::to_string(block_.idx));
  return var;
}

void InferContext::set_output(std::string_view slot, std::size_t i, const Shape& shape,
                              DataType dtype) {
  if (Var* var = output_var(slot, i)) {
    var->shape = shape;
    var->dtype = dtype;
  }
}

void InferContext::set_output_dtype(std::string_view slot, DataType dtype) {
  if (Var* var = output_var(slot, 0)) var->dtype = dtype;
}

void InferContext::pass_through(std::string_view in_slot, std::string_view out_slot) {
  const std::size_t outs = output_count(out_slot);
  if (outs > input_count(in_slot))
    fail("output " + std::string(out_slot) + " has " + std::to_string(outs) + " vars but input " +
         std::string(in_slot) + " has " + std::to_string(input_count(in_slot)));
  for (std::size_t i = 0; i < outs; ++i) {
    // Copy first: the output may be the input var itself.
    const Var& in = input(in_slot, i);
    Shape shape = in.shape;
    set_output(out_slot, i, shape, in.dtype);
  }
}

const Attribute& InferContext::attr(std::string_view name) const {
  if (const Attribute* a = op_.attr(name)) return *a;
  for (const AttrDef& def : attr_defs_)
    if (def.name == name && def.default_value) return *def.default_value;
  fail("required attribute '" + std::string(name) + "' is missing");
}

int64_t InferContext::int_attr(std::string_view name) const {
  const Attribute& a = attr(name);
  if (a.type() == AttrType::INT || a.type() == AttrType::LONG || a.type() == AttrType::BOOLEAN)
    return a.as_int64();
  fail("attribute '" + std::string(name) + "' has type " + std::string(to_string(a.type())) +
       ", expected an integer");
}

bool InferContext::bool_attr(std::string_view name) const {
  const Attribute& a = attr(name);
  if (a.type() == AttrType::BOOLEAN) return a.get<bool>();
  if (a.type() == AttrType::INT || a.type() == AttrType::LONG) return a.as_int64() != 0;
  fail("attribute '" + std::string(name) + "' has type " + std::string(to_string(a.type())) +
       ", expected BOOLEAN");
}

double InferContext::float_attr(std::string_view name) const {
  const Attribute& a = attr(name);
  switch (a.type()) {
    case AttrType::FLOAT: return a.get<float>();
    case AttrType::FLOAT64: return a.get<double>();
    case AttrType::INT: case AttrType::LONG: return static_cast<double>(a.as_int64());
    default:
      fail("attribute '" + std::string(name) + "' has type " + std::string(to_string(a.type())) +
           ", expected FLOAT");
  }
}

Shape InferContext::ints_attr(std::string_view name) const {
  const Attribute& a = attr(name);
  if (a.type() == AttrType::LONGS) return a.get<std::vector<int64_t>>();
  if (a.type() == AttrType::INTS) {
    const auto& v = a.get<std::vector<int32_t>>();
    return Shape(v.begin(), v.end());
  }
  fail("attribute '" + std::string(name) + "' has type " + std::string(to_string(a.type())) +
       ", expected INTS or LONGS");
}

DataType InferContext::dtype_attr(std::string_view name) const {
  const int64_t value = int_attr(name);
  if (value < 0 || value > INT32_MAX || !is_valid_var_kind(static_cast<int32_t>(value)) ||
      element_size(static_cast<DataType>(value)) == 0)
    fail("attribute '" + std::string(name) + "' is " + std::to_string(value) +
         ", which is not a tensor element type");
  return static_cast<DataType>(value);
}

void InferContext::fail(const std::string& message) const {
  throw Error("op '" + op_.type + "': " + message);
}

InferShapeFn make_infer(const std::vector<AttrDef>& attrs, InferBody body) {
  auto defaults = std::make_shared<const std::vector<AttrDef>>(attrs);
  return [defaults, body = std::move(body)](const Op& op, Block& block) {
    InferContext ctx(op, block, *defaults);
    body(ctx);
  };
}

void add_def(OpRegistry& registry, OpDef def, InferBody body) {
  if (body) def.infer_shape = make_infer(def.attrs, std::move(body));
  registry.add(std::move(def));
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t product(const Shape& shape, std::size_t begin, std::size_t end) {
  int64_t n = 1;
  for (std::size_t i = begin; i < end; ++i) {
    if (shape[i] < 0) return -1;
    n *= shape[i];
  }
  return n;
}

int64_t merge_dim(const InferContext& ctx, int64_t a, int64_t b, const std::string& what) {
  if (a < 0) return b;
  if (b < 0 || a == b) return a;
  ctx.fail(what + ": " + std::to_string(a) + " vs " + std::to_string(b));
}

bool compatible(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] >= 0 && b[i] >= 0 && a[i] != b[i]) return false;
  return true;
}

std::size_t normalize_axis(const InferContext& ctx, int64_t axis, std::size_t rank,
                           const std::string& what) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    ctx.fail(what + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

}  // namespace ctp::defs
