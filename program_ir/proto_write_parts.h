// The protobuf writer's encoder of one OpDesc, for packed_op (op_packing.cc).
#pragma once
#include <memory>
#include <string_view>

#include "program_ir/op.h"

namespace ctp::proto_write {

// `op`'s OpDesc message (its fields, without a key or length before them)
// as write_program_proto writes it, in `storage`, a buffer of its own.
std::string_view encode_op_desc(const Op& op, std::shared_ptr<char[]>& storage);

}  // namespace ctp::proto_write
