// `ctp verify`: every structural problem of a program, each named by its
// place (block, op index, op type, var or attribute), all reported at once.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/schema/op_def.h"
#include "program_ir/program.h"
#include "program_ir/source_location.h"

namespace ctp {

struct Diagnostic {
  enum Severity { Error, Warning };

  Severity severity = Error;
  // The block, and the op (index and type) with its var, slot or attribute
  // when the problem is theirs.
  SourceLocation place;
  std::string message;

  // `block 0, op 17 'c_allreduce_sum', attr 'ring_id': has type FLOAT, expected INT`;
  // warnings start with `warning: `.
  std::string to_string() const;
};

// Checks, in one linear pass:
//  - each block's idx equals its position; parent_idx names another existing
//    block without cycles (block 0's is -1); forward_block_idx is -1 or a block;
//  - every var an op names is declared in its block or an ancestor;
//  - op_role_var is STRINGS of even length naming declared vars;
//  - attribute types match the registry (the common attributes on every op),
//    BLOCK/BLOCKS attributes name existing blocks, required attributes exist;
//  - a known op's slots are declared by its definition, non-dispensable ones
//    are present and non-duplicable ones hold one var.
// Attributes a known op does not declare are warnings. Ops whose type has no
// schema in the registry are not diagnostics (Paddle programs hold many ops
// ctp has no use for: one warning each would bury the rest); VerifyResult
// counts them by type, and only the checks that need no schema apply to them.
struct OpTypeCount {
  std::string type;
  int64_t count = 0;
};

struct VerifyResult {
  std::vector<Diagnostic> diagnostics;
  // Op types without a schema and how many ops of each, most first (then by name).
  std::vector<OpTypeCount> ops_without_schema;
  // What was checked.
  int64_t blocks = 0, vars = 0, ops = 0;
  int64_t ops_with_schema = 0;  // checked against their schema too
  // One sentence saying what was checked, with the counts.
  std::string checked() const;
};

VerifyResult verify(const Program& program, const OpRegistry& registry = OpRegistry::global());

// verify(...).diagnostics.
std::vector<Diagnostic> verify_program(const Program& program,
                                       const OpRegistry& registry = OpRegistry::global());

// Whether any diagnostic is an error.
bool has_errors(const std::vector<Diagnostic>& diagnostics);

}  // namespace ctp
