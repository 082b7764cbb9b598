#include "executor/runtime/kernel.h"

#include <algorithm>

namespace ctp {

Tensor* KernelContext::find_input(std::string_view slot, std::size_t i) {
  const auto& names = input_names(slot);
  if (i >= names.size())
    throw error("input slot '" + std::string(slot) + "' has no argument " +
                std::to_string(i));
  return scope_.find(names[i]);
}

Tensor& KernelContext::input(std::string_view slot, std::size_t i) {
  if (const OpDef* def = schema(); def && def->reads_only_shape_of(slot))
    throw error(describe_input(slot, i) + " is shape-only (its schema says the kernels of '" +
                op().type + "' read only its dtype and shape, and its elements may be " +
                "released before this op), but the kernel reads its elements");
  Tensor* t = find_input(slot, i);
  if (!t || !t->initialized())
    throw error("input " + std::string(slot) + "='" + input_names(slot)[i] +
                "' is used before it is initialized");
  return *t;
}

const Tensor& KernelContext::shape_input(std::string_view slot, std::size_t i) {
  Tensor* t = find_input(slot, i);
  if (!t || !t->has_shape())
    throw error("input " + std::string(slot) + "='" + input_names(slot)[i] +
                "' is used before it is initialized");
  return *t;
}

Tensor& KernelContext::output(std::string_view slot, std::size_t i) {
  const auto& names = output_names(slot);
  if (i >= names.size())
    throw error("output slot '" + std::string(slot) + "' has no argument " +
                std::to_string(i));
  return scope_.var(names[i]);
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
