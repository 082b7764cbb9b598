#include "program_ir/op_packing.h"

#include <memory>
#include <string_view>
#include <utility>

#include "program_ir/proto_read_parts.h"
#include "program_ir/proto_write_parts.h"

namespace ctp {

Op packed_op(const Op& op) {
  // Unknown fields stay where they are: the reader keeps no op that has
  // them as its bytes either. Attributes kept as bytes whose names do not
  // lead would be written as they are, and adopt_encoded_op finds names
  // only where the writer puts them.
  if (!op.unknown_fields.empty()) return op;
  if (const WireAttrs& wire = op.wire_attrs(); !wire.empty() && !wire.names_lead) return op;
  std::shared_ptr<char[]> storage;
  const std::string_view bytes = proto_write::encode_op_desc(op, storage);
  // The reader's own notes (op_role and op_role_var, as for an op read
  // from a file).
  const proto_read::InputOwner owner{std::shared_ptr<const void>(std::move(storage))};
  return proto_read::adopt_encoded_op(bytes, op, owner);
}

}  // namespace ctp
