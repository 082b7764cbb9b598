// A program rewrite in the style of MLIR/XLA passes: a name (for logs and
// errors) and one entry point. Each transpile mode is a startup pass and a
// main pass; see transpile.h for running both.
#pragma once
#include <string_view>

#include "program_ir/program.h"

namespace ctp {

class ProgramPass {
 public:
  virtual ~ProgramPass() = default;
  virtual std::string_view name() const = 0;
  // Rewrites the program in place; throws ctp::Error on bad input.
  virtual void run(Program& program) = 0;
};

}  // namespace ctp
