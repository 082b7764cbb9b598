// The protobuf writer's encoder of one VarDesc, for add_packed_var
// (var_packing.cc).
#pragma once
#include <string>
#include <string_view>

#include "program_ir/var.h"

namespace ctp::proto_write {

// `var`'s VarDesc message (its fields, without a key or length before them)
// as write_program_proto writes it: a view into `scratch`, which it
// overwrites (a caller that adds many reuses one, allocating nothing).
std::string_view encode_var_desc(const Var& var, std::string& scratch);

}  // namespace ctp::proto_write
