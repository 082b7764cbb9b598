// Reading and writing programs as Paddle's framework.proto bytes (ProgramDesc),
// wire-compatible with Paddle: a program Paddle saved loads here, and a
// program written here loads in Paddle. program_ir/framework.proto is the
// schema.
//
// Reading keeps everything the bytes say:
//  - Fields unknown to ctp in ProgramDesc, BlockDesc, VarDesc, VarType and
//    OpDesc are kept as raw wire bytes (Program/Block/Var/Op::unknown_fields,
//    Var::type_unknown_fields) and written back after the known fields.
//    VarType's reader, tuple and any tensor description that does not belong
//    to the var's kind are such fields. The smaller messages (OpDesc.Var,
//    OpDesc.Attr, VarDesc.Attr, TensorDesc, versions) have no place for
//    unknown fields, so an unknown field there is an error, never lost data.
//  - The VarDesc attr `is_distributed` (BOOLEAN, i=1) becomes
//    Var::is_distributed; other VarDesc attrs go to Var::attrs.
//  - SCALAR and SCALARS attrs keep the Scalar messages' bytes.
// Malformed input (truncated or garbage bytes, a missing required field, an
// enum value outside framework.proto, an attr without the value its type
// needs or with a value of another type) raises ctp::Error naming the source
// and the place: "prog.pb: block 0, op 3 'mul', attr 'x_num_col_dims': ...".
//
// Writing is deterministic: fields in field-number order, repeated numbers
// unpacked (as Paddle's proto2 schema writes them), optional bools and
// forward_block_idx only when they differ from their defaults, dtype/shape/
// lod_level only for kinds with a tensor description (LOD_TENSOR,
// SELECTED_ROWS: no lod_level, LOD_TENSOR_ARRAY), is_distributed as the last
// VarDesc attr when true.
#pragma once
#include <string>
#include <string_view>

#include "program_ir/program.h"

namespace ctp {

// `source` names the input in error messages (usually its file name).
Program parse_program_proto(std::string_view bytes, const std::string& source);
std::string serialize_program_proto(const Program& program);

}  // namespace ctp
