#include "program_ir/op_compatible_map.h"

#include <array>

#include "program_ir/wire_format.h"
#include "program_ir/wire_read.h"

namespace ctp {
namespace {

using namespace wire_read;
using Kind = OpCompatibleMap::Kind;

constexpr std::array<std::string_view, 5> kKindNames = {
    "COMPATIBLE", "DEFINITELY_NOT", "POSSIBLE", "BUG_FIX", "PRECISION_CHANGE"};

// Field numbers: OpCompatibleMap, OpCompatiblePair, CompatibleInfo.
constexpr uint32_t kPair = 1, kDefaultRequiredVersion = 2;
constexpr uint32_t kOpName = 1, kCompatibleInfo = 2;
constexpr uint32_t kVersion = 1, kKind = 2;

// CompatibleInfo, merged into `pair` (a second occurrence overwrites).
void merge_info(Reader r, OpCompatibleMap::Pair& pair, bool& has_version, bool& has_kind) {
  for_each_field(r, [&](const Tag& tag, std::size_t start) {
    if (tag.field == kVersion) {
      pair.version = read_bytes_field(r, tag, start, "version");
      has_version = true;
    } else if (tag.field == kKind) {
      const int32_t value = wire::as_int32(read_varint_field(r, tag, start, "type"));
      if (value < 0 || value >= static_cast<int32_t>(kKindNames.size()))
        throw WireFault(r.offset_at(start), "invalid CompatibleInfo.Type " + std::to_string(value));
      pair.kind = static_cast<Kind>(value);
      has_kind = true;
    } else {
      r.skip_field(tag, start);
    }
  });
}

OpCompatibleMap::Pair decode_pair(Reader r) {
  OpCompatibleMap::Pair pair;
  const std::size_t at = r.offset();
  bool has_name = false, has_info = false, has_version = false, has_kind = false;
  for_each_field(r, [&](const Tag& tag, std::size_t start) {
    if (tag.field == kOpName) {
      pair.op_name = read_bytes_field(r, tag, start, "op_name");
      has_name = true;
    } else if (tag.field == kCompatibleInfo) {
      merge_info(nested(r, tag, start, "compatible_info"), pair, has_version, has_kind);
      has_info = true;
    } else {
      r.skip_field(tag, start);
    }
  });
  if (!has_name) throw WireFault(at, "OpCompatiblePair has no op_name (field 1)");
  if (!has_info) throw WireFault(at, "OpCompatiblePair has no compatible_info (field 2)");
  if (!has_version) throw WireFault(at, "CompatibleInfo has no version (field 1)");
  if (!has_kind) throw WireFault(at, "CompatibleInfo has no type (field 2)");
  return pair;
}

}  // namespace

std::string_view to_string(Kind kind) {
  const auto i = static_cast<std::size_t>(kind);
  return i < kKindNames.size() ? kKindNames[i] : "UNKNOWN_COMPATIBLE_TYPE";
}

std::optional<Kind> compatible_kind_from_string(std::string_view name) {
  for (std::size_t i = 0; i < kKindNames.size(); ++i)
    if (kKindNames[i] == name) return static_cast<Kind>(i);
  return std::nullopt;
}

OpCompatibleMap decode_op_compatible_map(std::string_view bytes, std::size_t base) {
  OpCompatibleMap map;
  Reader r(bytes, base);
  for_each_field(r, [&](const Tag& tag, std::size_t start) {
    if (tag.field == kPair)
      map.pairs.push_back(decode_pair(nested(r, tag, start, "pair")));
    else if (tag.field == kDefaultRequiredVersion)
      map.default_required_version = read_bytes_field(r, tag, start, "default_required_version");
    else
      r.skip_field(tag, start);
  });
  return map;
}

std::string encode_op_compatible_map(const OpCompatibleMap& map) {
  std::string out;
  wire::Writer w(out);
  for (const OpCompatibleMap::Pair& pair : map.pairs) {
    const std::size_t body = w.begin_message(kPair);
    w.bytes_field(kOpName, pair.op_name);
    const std::size_t info = w.begin_message(kCompatibleInfo);
    w.bytes_field(kVersion, pair.version);
    w.int32_field(kKind, static_cast<int32_t>(pair.kind));
    w.end_message(info);
    w.end_message(body);
  }
  if (map.default_required_version)
    w.bytes_field(kDefaultRequiredVersion, *map.default_required_version);
  return out;
}

std::optional<OpCompatibleMap> canonical_op_compatible_map(std::string_view bytes) {
  return decode_if_canonical(
      bytes, [](std::string_view b) { return decode_op_compatible_map(b); },
      encode_op_compatible_map);
}

}  // namespace ctp
