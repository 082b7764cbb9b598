// Graphviz form of a program (`ctp dump --emit dot`), for people who would
// rather look at the dataflow than read it.
#pragma once
#include <string>

#include "program_ir/program.h"

namespace ctp {

// A `digraph`: each block is a `subgraph cluster_N`; ops are boxes labelled
// with their type and op_role, vars are ellipses (persistable ones filled
// grey, undeclared ones dashed), edges run var -> op for inputs and
// op -> var for outputs. A var is drawn in the block that declares it, so an
// op of a sub-block reaches into its parent's cluster.
std::string program_to_dot(const Program& program);

// `s` as the inside of a DOT double-quoted string.
std::string dot_escape(std::string_view s);

}  // namespace ctp
