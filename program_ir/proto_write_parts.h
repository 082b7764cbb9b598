// The protobuf writer's encoder of one VarDesc, for add_packed_var
// (var_packing.cc).
#pragma once
#include <string>

#include "program_ir/var.h"

namespace ctp::proto_write {

// `var`'s VarDesc message (its fields, without a key or length before them)
// as write_program_proto writes it.
std::string encode_var_desc(const Var& var);

}  // namespace ctp::proto_write
