// The tensors of one running program, by var name. Thread-compatible: one
// executor thread uses a scope at a time (the single-process multi-device
// modes give each device thread its own scope).
#pragma once
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "executor/runtime/tensor.h"
#include "program_ir/name_hash.h"

namespace ctp {

class Scope {
 public:
  // The tensor of that var, created uninitialized when new. References stay
  // valid as other vars are added.
  Tensor& var(std::string_view name);
  Tensor* find(std::string_view name);
  const Tensor* find(std::string_view name) const;
  // Throws ctp::Error naming the var when it is absent or uninitialized.
  Tensor& get(std::string_view name);
  const Tensor& get(std::string_view name) const;
  bool has(std::string_view name) const { return find(name) != nullptr; }
  bool erase(std::string_view name);
  std::vector<std::string> names() const;  // sorted

 private:
  // node-based: element addresses are stable across rehashing
  std::unordered_map<std::string, Tensor, NameHash, std::equal_to<>> tensors_;
};

}  // namespace ctp
