// Where an error or a finding of `verify` is: the file, the place in the
// program (block, op, var, slot, attribute, or a part outside the blocks),
// and for errors of a run the rank, ring and collective (as c10d's errors
// carry them). One plain value that ctp::Error carries beside its message,
// filled by the code that knows each part and spelled one way everywhere:
//
//   prog.pb: block 0, op 3 'mul', attr 'x_num_col_dims'
//   grad_allreduce main: block 0, op 11 'mul_grad'
//   block 0, op 2 'c_allreduce_sum': rank 1 of 4, ring 0 (gloo): all_reduce(sum) FP32[8]
//
// Every field is public and plain, so that bindings can show them as fields.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace ctp {

struct SourceLocation {
  // The input: a file name, "<stdin>", or another name the caller gave it.
  std::string source;
  // The transpile pass at work and the program it rewrites ("grad_allreduce main").
  std::string pass;
  // A part of the program outside its blocks ("version", "op_version_map").
  std::string part;
  // A position in a text input, from 1; 0 when not known.
  int64_t line = 0;
  int64_t column = 0;
  // The path to the place inside a document, when the reader has one (JSON:
  // "blocks[0].ops[3].attrs.scale"). It is printed instead of the fields
  // below, which the reader fills as far as the path names them.
  std::string path;
  int64_t block = -1;
  int64_t op = -1;       // the op's position in its block; -1 when not known
  int64_t op_count = 1;  // more than 1: the ops op .. op + op_count - 1, run as one batch
  std::string op_type;
  int64_t var = -1;  // the var's position among its block's vars; -1 when not known
  std::string var_name;
  std::string slot_side;  // "input" or "output"; empty when the place is no slot
  int64_t slot = -1;      // the slot's position among the op's slots of that side
  std::string slot_name;
  int64_t attr = -1;  // the attribute's position among its op's (or var's)
  std::string attr_name;
  // Of a run.
  int64_t rank = -1;  // the rank within its ring (or group)
  int64_t nranks = -1;
  int64_t ring = -1;
  std::string backend;     // "gloo", "nccl", "threads"
  std::string collective;  // the call and its tensor: "all_reduce(sum) FP32[8]"

  bool has_block() const { return block >= 0; }
  bool has_op() const { return op >= 0 || !op_type.empty(); }
  bool has_var() const { return var >= 0 || !var_name.empty(); }
  bool has_slot() const { return !slot_side.empty(); }
  bool has_attr() const { return attr >= 0 || !attr_name.empty(); }
  bool has_rank() const { return rank >= 0 || ring >= 0; }
  bool empty() const;

  // The place as errors print it (the examples above); "" when empty().
  std::string to_string() const;

  // Fills what this place lacks from `outer`, a place around it (the op a
  // kernel runs, the file a program came from), so that each part is named
  // once, by the innermost code that knows it. An op this place names
  // already is kept with its block, var, slot and attribute: `outer` may
  // then be another op (a kernel that ran a sub-block's op). An op named by
  // its type alone (by code that has the op but not its position) is
  // `outer`'s op when that has the same type, and takes its block and index.
  void fill_from(const SourceLocation& outer);

  bool operator==(const SourceLocation&) const = default;
};

// Prints to_string(), or "(no place)" when empty.
std::ostream& operator<<(std::ostream& os, const SourceLocation& at);

// A name from the input as places print it: control bytes escaped, and cut
// short (with "..."), since a hostile file may hold a name of any length.
std::string printable(std::string_view name);

}  // namespace ctp
