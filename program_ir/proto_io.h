// Reading and writing programs as Paddle's framework.proto bytes (ProgramDesc),
// wire-compatible with Paddle: a program Paddle saved loads here, and a
// program written here loads in Paddle. program_ir/framework.proto is the
// schema.
//
// Reading keeps everything the bytes say, so that writing gives the bytes
// back (every real Paddle program in ../shared/realworld does):
//  - Every field of Paddle's current framework.proto and Paddle 1.x's
//    op_compatible_map is read: every VarType.Type (the tensor kinds' own
//    descriptions included), reader and tuple descriptions, every AttrType.
//  - proto2 presence: optional fields written although they hold their
//    default stay written (Var::explicit_defaults, Var::lod_level,
//    Op::is_target_explicit, Block::forward_block_idx_explicit,
//    Program::version_number_absent), and a tensor kind's missing tensor
//    description stays missing (Var::tensor_desc_absent).
//  - Fields unknown to ctp in ProgramDesc, BlockDesc, VarDesc, VarType and
//    OpDesc keep their bytes and their place among the known fields
//    (unknown_fields.h). A tensor description that does not belong to the
//    var's kind is such a field. The smaller messages (OpDesc.Var,
//    OpDesc.Attr, VarDesc.Attr, TensorDesc, versions) have no place for
//    unknown fields, so an unknown field there is an error, never lost data.
//  - The VarDesc attr `is_distributed` sets Var::is_distributed; it stays in
//    Var::attrs unless it has the form ctp writes (var.h).
//  - SCALAR and SCALARS attrs and the op_compatible_map keep their bytes,
//    which must be well-formed messages (scalar.h, op_compatible_map.h).
//  - An op's attributes, when they are one run of fields (as protobuf
//    libraries write them), are checked and then kept as those bytes
//    (Op::wire_attrs) until something asks for them, and written back as
//    they came; a rewrite reads op_role and op_role_var of every op without
//    decoding the rest (op.h). Read with an owner of the input, an op with
//    no unknown fields keeps its whole OpDesc (Op::set_wire_op): its slots
//    are decoded on first use, and while nothing changes it, it is written
//    back as those bytes, whatever their field order.
// Malformed input (truncated or garbage bytes, a missing required field, an
// enum value outside framework.proto, an attr without the value its type
// needs or with a value of another type) raises ctp::Error naming the source
// and the place: "prog.pb: block 0, op 3 'mul', attr 'x_num_col_dims': ...".
//
// Writing is deterministic: known fields in field-number order, repeated
// numbers unpacked (as Paddle's proto2 schema writes them), an optional field
// when it differs from its default or was read although it held it, a
// tensor description for the tensor kinds unless it is absent, unknown fields
// at their places, is_distributed as the last VarDesc attr when it is true
// and no attr of the var's holds it. A program read from protobuf library
// output (canonical bytes) is written back byte for byte.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "program_ir/program.h"

namespace ctp {

class MappedFile;

class ByteSink;  // program_ir/byte_sink.h

// `source` names the input in error messages (usually its file name).
Program parse_program_proto(std::string_view bytes, const std::string& source);
// How parse_program_proto reads.
struct ProtoReadOptions {
  // Keeps the bytes alive (a mapped file): the program's ops then hold views
  // of their OpDesc bytes and a share of `owner` instead of copies, decode
  // their slots and attributes when first asked, and an op that nothing
  // changes is written back as its bytes (Op::set_wire_op). A large rewrite
  // then costs little more than reading and copying its input.
  std::shared_ptr<const void> owner;
  // Threads that parse the vars and ops of a large block (thousands of
  // them): 0, one per core (at most 8); 1, the calling thread only. The
  // program, and the error for bad bytes, are the same for any number.
  unsigned threads = 0;
  // The mapped file `bytes` are (all of it), when they are: the read gives
  // its pages back behind it, once it has found a block's vars and ops and
  // after each chunk of them it parses, so that a large input is not mapped
  // whole beside the program read from it (the load was a large
  // transpile's peak memory: bench/RESULTS.md, session 22). The ops keep
  // their views; reading them again maps the pages again.
  const MappedFile* mapped = nullptr;
};
Program parse_program_proto(std::string_view bytes, const std::string& source,
                            const ProtoReadOptions& options);
std::string serialize_program_proto(const Program& program);
// The same bytes, handed to `sink` in pieces as they are encoded (a size
// pass over the program first, then the write), so that the output is never
// held whole in memory. What the sink throws propagates. With `input` (the
// mapped file the program was read from), each pass gives the input's pages
// back behind it (PagesBehind): the bytes written are the same.
void write_program_proto(const Program& program, ByteSink& sink,
                         const MappedFile* input = nullptr);

}  // namespace ctp
