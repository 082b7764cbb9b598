// A hash for containers keyed by std::string that are asked with a
// std::string_view (heterogeneous lookup: no std::string is made to look a
// name up): std::unordered_map<std::string, T, NameHash, std::equal_to<>>.
#pragma once
#include <cstddef>
#include <functional>
#include <string_view>

namespace ctp {

struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace ctp
