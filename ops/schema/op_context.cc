#include "ops/schema/op_context.h"

namespace ctp {
namespace {

const std::vector<std::string>& slot_args(const std::vector<Slot>& slots, std::string_view name) {
  static const std::vector<std::string> kEmpty;
  for (const Slot& s : slots)
    if (s.name == name) return s.args;
  return kEmpty;
}

}  // namespace

const std::vector<std::string>& OpContext::input_names(std::string_view slot) const {
  return slot_args(op_.inputs(), slot);
}

const std::vector<std::string>& OpContext::output_names(std::string_view slot) const {
  return slot_args(op_.outputs(), slot);
}

std::string OpContext::describe_input(std::string_view slot, std::size_t i) const {
  const auto& args = input_names(slot);
  std::string s = "input " + std::string(slot);
  if (i < args.size()) s += " '" + args[i] + "'";
  return s;
}

const OpDef* OpContext::schema() const {
  if (!schema_looked_up_) {
    schema_looked_up_ = true;
    schema_ = OpRegistry::global().find(op_.type);
  }
  return schema_;
}

const Attribute* OpContext::find_attr(std::string_view name) const {
  if (const Attribute* a = op_.attr(name)) return a;
  if (!attr_defaults_ && !defaults_looked_up_) {
    defaults_looked_up_ = true;
    if (const OpDef* def = schema()) attr_defaults_ = &def->attrs;
  }
  if (attr_defaults_)
    for (const AttrDef& def : *attr_defaults_)
      if (def.name == name) return def.default_value ? &*def.default_value : nullptr;
  if (const AttrDef* common = OpRegistry::common_attr(name))
    if (common->default_value) return &*common->default_value;
  return nullptr;
}

const Attribute& OpContext::attr(std::string_view name) const {
  if (const Attribute* a = find_attr(name)) return *a;
  fail("attribute '" + std::string(name) + "' is missing and has no default");
}

// The attribute, or null when it is absent and the caller has a fallback.
const Attribute* OpContext::typed_attr(std::string_view name, bool has_fallback) const {
  const Attribute* a = find_attr(name);
  if (!a && !has_fallback) attr(name);  // fails naming the attribute
  return a;
}

void OpContext::fail_type(std::string_view name, const Attribute& a, const char* expected) const {
  fail("attribute '" + std::string(name) + "' has type " + std::string(to_string(a.type())) +
       ", expected " + expected);
}

int64_t OpContext::int_attr(std::string_view name, std::optional<int64_t> fallback) const {
  const Attribute* a = typed_attr(name, fallback.has_value());
  if (!a) return *fallback;
  switch (a->type()) {
    case AttrType::INT: case AttrType::LONG: case AttrType::BOOLEAN: return a->as_int64();
    default: fail_type(name, *a, "an integer");
  }
}

double OpContext::float_attr(std::string_view name, std::optional<double> fallback) const {
  const Attribute* a = typed_attr(name, fallback.has_value());
  if (!a) return *fallback;
  switch (a->type()) {
    case AttrType::FLOAT: return a->get<float>();
    case AttrType::FLOAT64: return a->get<double>();
    case AttrType::INT: case AttrType::LONG: return static_cast<double>(a->as_int64());
    default: fail_type(name, *a, "a number");
  }
}

bool OpContext::bool_attr(std::string_view name, std::optional<bool> fallback) const {
  const Attribute* a = typed_attr(name, fallback.has_value());
  if (!a) return *fallback;
  switch (a->type()) {
    case AttrType::BOOLEAN: case AttrType::INT: case AttrType::LONG: return a->as_int64() != 0;
    default: fail_type(name, *a, "a boolean");
  }
}

std::string OpContext::string_attr(std::string_view name,
                                   std::optional<std::string> fallback) const {
  const Attribute* a = typed_attr(name, fallback.has_value());
  if (!a) return *std::move(fallback);
  if (a->type() != AttrType::STRING) fail_type(name, *a, "STRING");
  return a->get<std::string>();
}

std::vector<int64_t> OpContext::ints_attr(std::string_view name,
                                          std::optional<std::vector<int64_t>> fallback) const {
  const Attribute* a = typed_attr(name, fallback.has_value());
  if (!a) return *std::move(fallback);
  switch (a->type()) {
    case AttrType::INTS: {
      const auto& v = a->get<std::vector<int32_t>>();
      return std::vector<int64_t>(v.begin(), v.end());
    }
    case AttrType::LONGS: return a->get<std::vector<int64_t>>();
    default: fail_type(name, *a, "INTS or LONGS");
  }
}

std::vector<std::string> OpContext::strings_attr(
    std::string_view name, std::optional<std::vector<std::string>> fallback) const {
  const Attribute* a = typed_attr(name, fallback.has_value());
  if (!a) return *std::move(fallback);
  if (a->type() != AttrType::STRINGS) fail_type(name, *a, "STRINGS");
  return a->get<std::vector<std::string>>();
}

DataType OpContext::dtype_attr(std::string_view name, std::optional<DataType> fallback) const {
  const Attribute* a = typed_attr(name, fallback.has_value());
  if (!a) return *fallback;
  const int64_t value = int_attr(name);
  if (value < 0 && fallback) return *fallback;
  const std::optional<DataType> dtype = element_type_from_number(value);
  if (!dtype)
    fail("attribute '" + std::string(name) + "' is " + std::to_string(value) +
         ", which is not a tensor element type");
  return *dtype;
}

SourceLocation OpContext::location() const {
  int64_t index = op_index_;
  if (index < 0) {
    int64_t i = 0;
    for (const Op& op : block_.ops()) {
      if (&op == &op_) {
        index = i;
        break;
      }
      ++i;
    }
  }
  return SourceLocation{.block = block_.idx, .op = index, .op_type = op_.type};
}

Error OpContext::error(std::string message) const { return Error(location(), std::move(message)); }

void OpContext::fail(std::string message) const { throw error(std::move(message)); }

}  // namespace ctp
