#include "program_ir/var_packing.h"

#include <string>

#include "program_ir/error.h"
#include "program_ir/framework_fields.h"
#include "program_ir/proto_write_parts.h"
#include "program_ir/wire_format.h"

namespace ctp {
namespace {

// Where the VarDesc's name lies in `bytes` (the writer writes one).
std::string_view name_within(std::string_view bytes) {
  wire::Reader r(bytes, 0);
  while (!r.done()) {
    const std::size_t start = r.position();
    const wire::Tag tag = r.read_tag();
    if (tag.field == fields::var::kName) return r.read_bytes();
    r.skip_field(tag, start);
  }
  throw Error("internal error: an encoded VarDesc has no name");
}

}  // namespace

bool add_packed_var(Block& block, const Var& var) {
  // Encoded here, then copied into the block's own storage.
  thread_local std::string scratch;
  const std::string_view bytes = proto_write::encode_var_desc(var, scratch);
  const WireVarFlags flags{.persistable = var.persistable,
                           .is_parameter = var.is_parameter,
                           .is_distributed = var.is_distributed};
  switch (block.emplace_wire_var(bytes, name_within(bytes), flags)) {
    case Block::WireVarAdded::kAdded:
      return true;
    case Block::WireVarAdded::kDeclared:
      return false;
    case Block::WireVarAdded::kNotHeldAsBytes:
      break;
  }
  return block.emplace_var(var).second;
}

}  // namespace ctp
