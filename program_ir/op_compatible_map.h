// Paddle 1.x's op compatibility map (ProgramDesc field 3): for some ops, the
// Paddle version that changed them and how. ctp keeps the map as its wire
// bytes (Program::op_compatible_map), so that it is written back exactly as
// read; this decodes and encodes those bytes for the checks, the JSON form and
// the text form.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ctp {

struct OpCompatibleMap {
  // CompatibleInfo.Type.
  enum class Kind : int32_t {
    COMPATIBLE = 0, DEFINITELY_NOT = 1, POSSIBLE = 2, BUG_FIX = 3, PRECISION_CHANGE = 4,
  };
  struct Pair {
    std::string op_name;
    std::string version;  // CompatibleInfo.version, e.g. "1.6.0"
    Kind kind = Kind::COMPATIBLE;
    bool operator==(const Pair&) const = default;
  };
  std::vector<Pair> pairs;
  std::optional<std::string> default_required_version;
  bool operator==(const OpCompatibleMap&) const = default;
};

std::string_view to_string(OpCompatibleMap::Kind kind);
std::optional<OpCompatibleMap::Kind> compatible_kind_from_string(std::string_view name);

// Decodes an OpCompatibleMap message. Malformed bytes, a missing required
// field or a kind outside the enum raise wire::WireFault, whose offset counts
// from `base` (where the bytes start in the whole input). Fields it does not
// know are skipped: the bytes keep them.
OpCompatibleMap decode_op_compatible_map(std::string_view bytes, std::size_t base = 0);
// The bytes protobuf writes for `map`: fields in number order.
std::string encode_op_compatible_map(const OpCompatibleMap& map);
// The decoded map when `bytes` are exactly what encode_op_compatible_map
// writes for it; nullopt otherwise.
std::optional<OpCompatibleMap> canonical_op_compatible_map(std::string_view bytes);

}  // namespace ctp
