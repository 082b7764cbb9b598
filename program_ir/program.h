// A whole program (framework.proto's ProgramDesc): its blocks and the
// version information Paddle stores beside them.
#pragma once
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "program_ir/block.h"

namespace ctp {

struct OpVersionEntry {
  std::string op_name;
  int32_t version = 0;
  bool operator==(const OpVersionEntry&) const = default;
};

class Program {
 public:
  // A deque, so references to blocks survive adding blocks.
  std::deque<Block> blocks;
  std::optional<int64_t> version;
  std::optional<std::vector<OpVersionEntry>> op_version_map;
  // op_compatible_map is kept as its raw wire bytes; ctp does not interpret it.
  std::optional<std::string> op_compatible_map;
  std::string unknown_fields;

  // A program with one empty global block.
  static Program with_global_block();

  Block& global_block();
  const Block& global_block() const;
  // Throws ctp::Error when there is no block of that index.
  Block& block(int32_t idx);
  const Block& block(int32_t idx) const;
  Block& add_block(int32_t parent_idx);
  std::size_t op_count() const;

  bool operator==(const Program&) const = default;
};

}  // namespace ctp
