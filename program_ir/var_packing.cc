#include "program_ir/var_packing.h"

#include <optional>
#include <string>

#include "program_ir/error.h"
#include "program_ir/framework_fields.h"
#include "program_ir/proto_write_parts.h"
#include "program_ir/wire_format.h"

namespace ctp {
namespace {

// The VarDesc's name field in `bytes` (the writer writes one): where the
// field starts, and the name.
struct NameField {
  std::size_t start;
  std::string_view name;
};
NameField name_field_within(std::string_view bytes) {
  wire::Reader r(bytes, 0);
  while (!r.done()) {
    const std::size_t start = r.position();
    const wire::Tag tag = r.read_tag();
    if (tag.field == fields::var::kName) return {start, r.read_bytes()};
    r.skip_field(tag, start);
  }
  throw Error("internal error: an encoded VarDesc has no name");
}

WireVarFlags flags_of(const Var& var) {
  return {.persistable = var.persistable,
          .is_parameter = var.is_parameter,
          .is_distributed = var.is_distributed};
}

// Adds a var as its VarDesc bytes: whether it was added (false: declared
// already), or nullopt when the block holds no vars as bytes, for the
// caller to add it as a Var.
std::optional<bool> add_as_bytes(Block& block, std::string_view bytes, std::string_view name,
                                 WireVarFlags flags) {
  switch (block.emplace_wire_var(bytes, name, flags)) {
    case Block::WireVarAdded::kAdded: return true;
    case Block::WireVarAdded::kDeclared: return false;
    case Block::WireVarAdded::kNotHeldAsBytes: break;
  }
  return std::nullopt;
}

}  // namespace

bool add_packed_var(Block& block, const Var& var) {
  // Encoded here, then copied into the block's own storage.
  thread_local std::string scratch;
  const std::string_view bytes = proto_write::encode_var_desc(var, scratch);
  if (const std::optional<bool> added =
          add_as_bytes(block, bytes, name_field_within(bytes).name, flags_of(var)))
    return *added;
  return block.emplace_var(var).second;
}

std::vector<std::size_t> add_packed_vars(Block& block, Var var,
                                         std::span<const std::string> names) {
  std::vector<std::size_t> declared;
  if (names.empty()) return declared;
  var.name = names.front();
  thread_local std::string scratch;
  const std::string_view encoded = proto_write::encode_var_desc(var, scratch);
  const NameField field = name_field_within(encoded);
  // Each var's bytes: the fields before the name, its own name field, and
  // the fields after (a block holding its vars as bytes copies them in).
  const std::string before(encoded.substr(0, field.start));
  const std::string after(
      encoded.substr(static_cast<std::size_t>(field.name.data() - encoded.data()) +
                     field.name.size()));
  const WireVarFlags flags = flags_of(var);
  std::string bytes;
  for (std::size_t i = 0; i < names.size(); ++i) {
    bytes.assign(before);
    wire::Writer w(bytes);
    w.bytes_field(fields::var::kName, names[i]);
    const std::size_t name_at = bytes.size() - names[i].size();
    bytes.append(after);
    std::optional<bool> added =
        add_as_bytes(block, bytes, std::string_view(bytes).substr(name_at, names[i].size()), flags);
    if (!added) {
      var.name = names[i];
      added = block.emplace_var(var).second;
    }
    if (!*added) declared.push_back(i);
  }
  return declared;
}

}  // namespace ctp
