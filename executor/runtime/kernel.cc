#include "executor/runtime/kernel.h"

#include <algorithm>

#include "ops/schema/op_def.h"

namespace ctp {
namespace {

const std::vector<std::string>& slot_args(const std::vector<Slot>& slots, std::string_view name) {
  static const std::vector<std::string> kEmpty;
  for (const Slot& s : slots)
    if (s.name == name) return s.args;
  return kEmpty;
}

}  // namespace

const std::vector<std::string>& KernelContext::input_names(std::string_view slot) const {
  return slot_args(op_.inputs, slot);
}

const std::vector<std::string>& KernelContext::output_names(std::string_view slot) const {
  return slot_args(op_.outputs, slot);
}

Tensor& KernelContext::input(std::string_view slot, std::size_t i) {
  const auto& names = input_names(slot);
  if (i >= names.size())
    throw Error(where() + "input slot '" + std::string(slot) + "' has no argument " +
                std::to_string(i));
  Tensor* t = scope_.find(names[i]);
  if (!t || !t->initialized())
    throw Error(where() + "input " + std::string(slot) + "='" + names[i] +
                "' is used before it is initialized");
  return *t;
}

Tensor& KernelContext::output(std::string_view slot, std::size_t i) {
  const auto& names = output_names(slot);
  if (i >= names.size())
    throw Error(where() + "output slot '" + std::string(slot) + "' has no argument " +
                std::to_string(i));
  return scope_.var(names[i]);
}

const Attribute* KernelContext::find_attr(std::string_view name) const {
  if (const Attribute* a = op_.attr(name)) return a;
  if (const AttrDef* def = OpRegistry::global().find_attr(op_.type, name))
    if (def->default_value) return &*def->default_value;
  return nullptr;
}

const Attribute& KernelContext::attr(std::string_view name) const {
  if (const Attribute* a = find_attr(name)) return *a;
  throw Error(where() + "attribute '" + std::string(name) + "' is missing and has no default");
}

std::string KernelContext::bad_attr_type(std::string_view name, const Attribute& a,
                                         const char* wanted) const {
  return where() + "attribute '" + std::string(name) + "' has type " +
         std::string(to_string(a.type())) + ", expected " + wanted;
}

int64_t KernelContext::attr_int(std::string_view name, int64_t fallback) const {
  const Attribute* a = find_attr(name);
  if (!a) return fallback;
  switch (a->type()) {
    case AttrType::INT: case AttrType::LONG: case AttrType::BOOLEAN: return a->as_int64();
    default: throw Error(bad_attr_type(name, *a, "an integer"));
  }
}

double KernelContext::attr_float(std::string_view name, double fallback) const {
  const Attribute* a = find_attr(name);
  if (!a) return fallback;
  switch (a->type()) {
    case AttrType::FLOAT: return a->get<float>();
    case AttrType::FLOAT64: return a->get<double>();
    case AttrType::INT: case AttrType::LONG: return static_cast<double>(a->as_int64());
    default: throw Error(bad_attr_type(name, *a, "a number"));
  }
}

bool KernelContext::attr_bool(std::string_view name, bool fallback) const {
  const Attribute* a = find_attr(name);
  if (!a) return fallback;
  switch (a->type()) {
    case AttrType::BOOLEAN: case AttrType::INT: case AttrType::LONG: return a->as_int64() != 0;
    default: throw Error(bad_attr_type(name, *a, "a boolean"));
  }
}

std::string KernelContext::attr_string(std::string_view name, std::string fallback) const {
  const Attribute* a = find_attr(name);
  if (!a) return fallback;
  if (a->type() != AttrType::STRING) throw Error(bad_attr_type(name, *a, "STRING"));
  return a->get<std::string>();
}

std::vector<int64_t> KernelContext::attr_ints(std::string_view name,
                                              std::vector<int64_t> fallback) const {
  const Attribute* a = find_attr(name);
  if (!a) return fallback;
  switch (a->type()) {
    case AttrType::INTS: {
      const auto& v = a->get<std::vector<int32_t>>();
      return std::vector<int64_t>(v.begin(), v.end());
    }
    case AttrType::LONGS: return a->get<std::vector<int64_t>>();
    default: throw Error(bad_attr_type(name, *a, "INTS or LONGS"));
  }
}

std::string KernelContext::where() const {
  std::string s = "block " + std::to_string(block_.idx);
  if (op_index_ >= 0) s += ", op " + std::to_string(op_index_);
  return s + " '" + op_.type + "': ";
}

KernelRegistry& KernelRegistry::global() {
  static KernelRegistry registry;
  return registry;
}

namespace {

template <typename Fn>
void add_to(std::unordered_map<std::string, Fn>& table, std::string op_type, Fn fn,
            const char* what) {
  if (table.count(op_type))
    throw Error(std::string(what) + " for op '" + op_type + "' registered twice");
  table.emplace(std::move(op_type), std::move(fn));
}

template <typename Fn>
const Fn* find_in(const std::unordered_map<std::string, Fn>& table, std::string_view op_type) {
  auto it = table.find(std::string(op_type));
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace

void KernelRegistry::add(std::string op_type, DeviceKind device, KernelFn fn) {
  add_to(device == DeviceKind::CPU ? cpu_ : cuda_, std::move(op_type), std::move(fn), "kernel");
}

const KernelFn* KernelRegistry::find(std::string_view op_type, DeviceKind device) const {
  return find_in(device == DeviceKind::CPU ? cpu_ : cuda_, op_type);
}

void KernelRegistry::add_batch(std::string op_type, DeviceKind device, BatchKernelFn fn) {
  add_to(device == DeviceKind::CPU ? cpu_batch_ : cuda_batch_, std::move(op_type), std::move(fn),
         "batch kernel");
}

const BatchKernelFn* KernelRegistry::find_batch(std::string_view op_type,
                                                DeviceKind device) const {
  return find_in(device == DeviceKind::CPU ? cpu_batch_ : cuda_batch_, op_type);
}

std::vector<std::string> KernelRegistry::op_types(DeviceKind device) const {
  const auto& table = device == DeviceKind::CPU ? cpu_ : cuda_;
  std::vector<std::string> out;
  for (const auto& [type, fn] : table) out.push_back(type);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ctp
