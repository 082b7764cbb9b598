// Paddle's unique_name.generate(key) ("key_0", "key_1", ... per key), with the
// counters owned by one transpile instead of by the Python process. Two
// transpiles therefore both start at "nccl_id_0"; in Paddle the second one in
// the same process would continue at "nccl_id_2".
#pragma once
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ctp {

class NameGenerator {
 public:
  std::string generate(std::string_view key);
  // Whether generate(key) has run, and every key it has run for (any order).
  bool used(std::string_view key) const;
  std::vector<std::string> keys() const;

 private:
  std::unordered_map<std::string, int> next_id_;
};

}  // namespace ctp
