// Reading and writing programs in ctp's JSON form, which is lossless both
// ways with the protobuf form. docs/json-format.md documents the schema:
//
//   {"version": 0, "blocks": [{"idx": 0, "parent_idx": -1,
//     "vars": [{"name": "fc_0.w_0", "type": "LOD_TENSOR", "dtype": "FP32",
//               "shape": [784, 10], "persistable": true, "is_parameter": true}],
//     "ops": [{"type": "mul", "inputs": {"X": ["x"], "Y": ["fc_0.w_0"]},
//              "outputs": {"Out": ["fc_0.tmp_0"]},
//              "attrs": {"op_role": {"type": "INT", "value": 0}}}]}]}
//
// Reading is streaming: each op and var is converted as soon as it is
// complete, so memory stays proportional to the program, not to a JSON
// document tree. Errors name the source and the JSON path
// ("prog.json: blocks[0].ops[3].attrs.scale: expected a number for FLOAT"),
// and syntax errors the line and column. Nesting deeper than the schema
// needs (kMaxJsonDepth) and duplicate keys are errors.
#pragma once
#include <string>
#include <string_view>

#include "program_ir/program.h"

namespace ctp {

// Far more than the schema's own depth (8), far less than could exhaust
// anything.
inline constexpr std::size_t kMaxJsonDepth = 64;

Program parse_program_json(std::string_view text, const std::string& source);

// One var or op per line. Throws ctp::Error (naming the place) for what
// JSON cannot hold: strings that are not valid UTF-8, and two slots, two
// attributes or two var attrs of one name.
std::string program_to_json(const Program& program);

}  // namespace ctp
