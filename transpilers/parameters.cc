#include "transpilers/parameters.h"

#include <functional>
#include <optional>
#include <unordered_set>

#include "program_ir/error.h"
#include "program_ir/name_hash.h"
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

// The walks below decode no var (Block::for_each_var): a block read from a
// file holds most of its vars as bytes, and a rewrite needs few of them.
ParameterSet marked_parameters(const Block& startup) {
  ParameterSet set{.source = ParamSource::kMarked};
  startup.for_each_var([&](const Block::VarEntry& var) {
    if (var.is_parameter) set.names.emplace_back(var.name);
  });
  return set;
}

ParameterSet optimizer_parameters(const Block& startup, const Block& main) {
  std::unordered_set<std::string, NameHash, std::equal_to<>> params;
  for (const Op& op : main.ops()) {
    if (!is_update_op(op)) continue;
    for (const std::string& name : *op.input("Param")) {
      const std::optional<Block::VarEntry> var = main.find_var_entry(name);
      if (var && var->persistable) params.insert(name);
    }
  }
  ParameterSet set{.source = ParamSource::kOptimizer};
  startup.for_each_var([&](const Block::VarEntry& var) {
    if (params.contains(var.name)) set.names.emplace_back(var.name);
  });
  const std::size_t startup_count = set.names.size();
  main.for_each_var([&](const Block::VarEntry& var) {
    if (params.contains(var.name) && !startup.has_var(var.name)) set.names.emplace_back(var.name);
  });
  // After the walk, which holds the block's lock while vars are bytes.
  for (std::size_t i = startup_count; i < set.names.size(); ++i)
    set.undeclared.push_back(main.var(set.names[i]));
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
