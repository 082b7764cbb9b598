#include "executor/runtime/scope.h"

#include <algorithm>

namespace ctp {

Tensor& Scope::var(std::string_view name) {
  auto it = tensors_.find(name);
  if (it != tensors_.end()) return it->second;
  return tensors_.emplace(std::string(name), Tensor{}).first->second;
}

Tensor* Scope::find(std::string_view name) {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const Tensor* Scope::find(std::string_view name) const {
  return const_cast<Scope*>(this)->find(name);
}

Tensor& Scope::get(std::string_view name) {
  Tensor* t = find(name);
  if (!t) throw Error("var '" + std::string(name) + "' has no tensor in the scope");
  if (!t->initialized())
    throw Error("var '" + std::string(name) + "' is used before it is initialized");
  return *t;
}

const Tensor& Scope::get(std::string_view name) const { return const_cast<Scope*>(this)->get(name); }

bool Scope::erase(std::string_view name) {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) return false;
  tensors_.erase(it);
  return true;
}

std::vector<std::string> Scope::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [name, tensor] : tensors_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ctp
