#include "transpilers/name_generator.h"

namespace ctp {

std::string NameGenerator::generate(std::string_view key) {
  auto [it, inserted] = next_id_.try_emplace(std::string(key), 0);
  return it->first + "_" + std::to_string(it->second++);
}

}  // namespace ctp
