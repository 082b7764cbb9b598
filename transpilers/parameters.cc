#include "transpilers/parameters.h"

#include <unordered_set>

#include "program_ir/error.h"
#include "program_ir/op_role.h"

namespace ctp {

std::string_view to_string(ParamSource source) {
  switch (source) {
    case ParamSource::kAuto: return "auto";
    case ParamSource::kMarked: return "marked";
    case ParamSource::kOptimizer: return "optimizer";
  }
  return "unknown";
}

ParamSource parse_param_source(std::string_view name) {
  for (ParamSource s : {ParamSource::kAuto, ParamSource::kMarked, ParamSource::kOptimizer})
    if (to_string(s) == name) return s;
  throw Error("unknown parameter source '" + std::string(name) +
              "' (expected marked, optimizer or auto)");
}

namespace {

ParameterSet marked_parameters(const Block& startup) {
  ParameterSet set{.source = ParamSource::kMarked};
  for (const Var& var : startup.vars())
    if (var.is_parameter) set.names.push_back(var.name);
  return set;
}

ParameterSet optimizer_parameters(const Block& startup, const Block& main) {
  std::unordered_set<std::string> params;
  for (const Op& op : main.ops()) {
    if (!is_update_op(op)) continue;
    for (const std::string& name : *op.input("Param")) {
      const Var* var = main.find_var(name);
      if (var && var->persistable) params.insert(name);
    }
  }
  ParameterSet set{.source = ParamSource::kOptimizer};
  for (const Var& var : startup.vars())
    if (params.count(var.name)) set.names.push_back(var.name);
  for (const Var& var : main.vars()) {
    if (!params.count(var.name) || startup.find_var(var.name)) continue;
    set.names.push_back(var.name);
    set.undeclared.push_back(var);
  }
  return set;
}

}  // namespace

ParameterSet find_parameters(const Program& startup, const Program* main, ParamSource requested) {
  const Block& startup_block = startup.global_block();
  if (requested == ParamSource::kMarked) return marked_parameters(startup_block);
  if (requested == ParamSource::kAuto) {
    ParameterSet marked = marked_parameters(startup_block);
    if (!marked.names.empty()) return marked;
  }
  if (!main)
    throw Error(std::string("parameters from the optimizer (--params ") + std::string(to_string(requested)) +
                ") need the main program; transpile both programs together");
  return optimizer_parameters(startup_block, main->global_block());
}

std::string describe(const ParameterSet& parameters, ParamSource requested) {
  std::string text = std::to_string(parameters.names.size()) + " parameter" +
                     (parameters.names.size() == 1 ? "" : "s") + ": ";
  if (parameters.source == ParamSource::kMarked) return text + "the vars marked is_parameter";
  if (requested == ParamSource::kAuto) text += "no var is marked is_parameter, so ";
  text += "the persistable Param inputs of the main program's update ops";
  if (!parameters.undeclared.empty())
    text += " (" + std::to_string(parameters.undeclared.size()) +
            " of them declared in the startup program from the main program)";
  return text;
}

}  // namespace ctp
