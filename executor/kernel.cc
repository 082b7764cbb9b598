#include "executor/kernel.h"

#include <algorithm>

#include "ops/op_def.h"

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

const Attribute& KernelContext::attr(std::string_view name) const {
  if (const Attribute* a = op_.attr(name)) return *a;
  if (const AttrDef* def = OpRegistry::global().find_attr(op_.type, name))
    if (def->default_value) return *def->default_value;
  throw Error(where() + "attribute '" + std::string(name) + "' is missing and has no default");
}

std::string KernelContext::where() const {
  return "op '" + op_.type + "' (block " + std::to_string(block_.idx) + "): ";
}

KernelRegistry& KernelRegistry::global() {
  static KernelRegistry registry;
  return registry;
}

void KernelRegistry::add(std::string op_type, DeviceKind device, KernelFn fn) {
  auto& table = device == DeviceKind::CPU ? cpu_ : cuda_;
  if (table.count(op_type))
    throw Error("kernel for op '" + op_type + "' registered twice");
  table.emplace(std::move(op_type), std::move(fn));
}

const KernelFn* KernelRegistry::find(std::string_view op_type, DeviceKind device) const {
  const auto& table = device == DeviceKind::CPU ? cpu_ : cuda_;
  auto it = table.find(std::string(op_type));
  return it == table.end() ? nullptr : &it->second;
}

std::vector<std::string> KernelRegistry::op_types(DeviceKind device) const {
  const auto& table = device == DeviceKind::CPU ? cpu_ : cuda_;
  std::vector<std::string> out;
  for (const auto& [type, fn] : table) out.push_back(type);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ctp
