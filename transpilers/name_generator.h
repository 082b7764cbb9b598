// Paddle's unique_name.generate(key) ("key_0", "key_1", ... per key), with the
// counters owned by one transpile instead of by the Python process. Two
// transpiles therefore both start at "nccl_id_0"; in Paddle the second one in
// the same process would continue at "nccl_id_2".
#pragma once
#include <string>
#include <string_view>
#include <optional>
#include <unordered_map>

namespace ctp {

class NameGenerator {
 public:
  std::string generate(std::string_view key);
  // A key both this and `other` have generated names from, if any.
  std::optional<std::string> key_shared_with(const NameGenerator& other) const;

 private:
  std::unordered_map<std::string, int> next_id_;
};

}  // namespace ctp
