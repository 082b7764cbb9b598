// The text form of a program (docs/text-format.md): one op per line, for
// golden files, diffs and people. ctp writes it but never reads it back.
#pragma once
#include <string>

#include "program_ir/program.h"

namespace ctp {

// The whole program: a `program` line, then each block with its vars and ops.
std::string program_to_text(const Program& program);

// One op, `TYPE INPUTS -> OUTPUTS {ATTRS}`, without prefix or newline.
std::string op_to_text(const Op& op);

// The golden form of a block: its op lines, each ending in '\n'.
std::string block_ops_to_text(const Block& block);

// The golden form of a program: block 0's op lines when it has one block;
// otherwise a `block N` line before the op lines of each block.
std::string program_ops_to_text(const Program& program);

// One attribute value as the text form shows it (`0.5f`, `STRINGS[]`, ...).
std::string attribute_to_text(const Attribute& attr);

// Shortest decimal that reads back to the same value (`nan`, `inf`, `-inf`
// for non-finite values). The FLOAT64 form always has a '.' or an exponent.
std::string float_to_text(float value);
std::string double_to_text(double value);

}  // namespace ctp
