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
  // ProgramDesc.version: absent, or a Version message. That message's one
  // field is optional too: version_number_absent marks a Version message
  // without it (version then holds 0).
  std::optional<int64_t> version;
  bool version_number_absent = false;
  std::optional<std::vector<OpVersionEntry>> op_version_map;
  // Paddle 1.x's op_compatible_map, kept as its wire bytes (checked when
  // read; program_ir/op_compatible_map.h decodes it).
  std::optional<std::string> op_compatible_map;
  UnknownFields unknown_fields;

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
