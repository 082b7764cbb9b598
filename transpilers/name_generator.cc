#include "transpilers/name_generator.h"

namespace ctp {

std::string NameGenerator::generate(std::string_view key) {
  auto [it, inserted] = next_id_.try_emplace(std::string(key), 0);
  return it->first + "_" + std::to_string(it->second++);
}

bool NameGenerator::used(std::string_view key) const {
  return next_id_.contains(std::string(key));
}

std::vector<std::string> NameGenerator::keys() const {
  std::vector<std::string> keys;
  keys.reserve(next_id_.size());
  for (const auto& [key, next] : next_id_) keys.push_back(key);
  return keys;
}

}  // namespace ctp
