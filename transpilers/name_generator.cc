#include "transpilers/name_generator.h"

namespace ctp {

std::string NameGenerator::generate(std::string_view key) {
  auto [it, inserted] = next_id_.try_emplace(std::string(key), 0);
  return it->first + "_" + std::to_string(it->second++);
}

std::optional<std::string> NameGenerator::key_shared_with(const NameGenerator& other) const {
  for (const auto& [key, next] : next_id_)
    if (other.next_id_.contains(key)) return key;
  return std::nullopt;
}

}  // namespace ctp
