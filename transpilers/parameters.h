// Which vars are parameters, for the rewrites that broadcast or snapshot them
// (GradAllReduce and LocalSGD's startup). The reference takes the startup
// program's vars marked is_parameter, but saved programs mark none: Paddle 1.x
// files have no such field, and no saved file sets it. So a transpile can also
// take the persistable Param inputs of the main program's update ops (an op
// with Param, Grad and LearningRate inputs: sgd, momentum, adam, rmsprop ...).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "program_ir/program.h"

namespace ctp {

enum class ParamSource {
  kAuto,       // kMarked when the startup's global block marks any var, else kOptimizer
  kMarked,     // the reference's rule: vars marked is_parameter
  kOptimizer,  // the persistable Param inputs of the main program's update ops
};
std::string_view to_string(ParamSource source);
// "auto", "marked" or "optimizer"; throws ctp::Error otherwise.
ParamSource parse_param_source(std::string_view name);

struct ParameterSet {
  ParamSource source = ParamSource::kMarked;  // what was used: kMarked or kOptimizer
  // In the order the rewrites take them: the startup program's global-block
  // declaration order, then (kOptimizer) those only the main program
  // declares, in its order.
  std::vector<std::string> names;
  // kOptimizer: the main program's vars of the parameters that the startup
  // program does not declare; the startup rewrite declares them there, as a
  // Paddle startup program declares every parameter it initialises.
  std::vector<Var> undeclared;
};

// The parameters `requested` names in the programs' global blocks. `main` may
// be null only for kMarked (and for kAuto when the startup marks a var);
// throws ctp::Error otherwise.
ParameterSet find_parameters(const Program& startup, const Program* main, ParamSource requested);

// One line for logs: "2 parameters: the vars marked is_parameter" or "... no
// var is marked is_parameter, so the persistable Param inputs of the update ops".
std::string describe(const ParameterSet& parameters, ParamSource requested);

}  // namespace ctp
