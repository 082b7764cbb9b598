// The walks the rewrites make over a block, written once: every op from the
// last to the first (the reference's reversed(list(enumerate(block.ops)))),
// and the backward ops that name (param, grad) pairs in op_role_var, in either
// direction. The visitor may insert ops after the op it is given, insert ops
// before it, or erase it: the walk goes on with the op that stood before it
// (or after it, walking forward), never with an inserted one, as the
// reference's walk over a snapshot of the op list does.
#pragma once
#include <functional>
#include <string_view>
#include <vector>

#include "program_ir/block.h"
#include "transpilers/rewrite_support.h"

namespace ctp {

// visit(handle, site) for every op, last first. site.index is the op's
// position when the walk began.
void for_each_op_reversed(Block& block, std::string_view pass,
                          const std::function<void(Block::OpHandle, const OpSite&)>& visit);

// A backward op with op_role_var. param()/grad() look a pair's vars up when
// asked (Paddle's block.vars[...]), so that a rewrite reads exactly the vars
// the reference reads, in its order, and fails where it fails.
struct GradOp {
  Block::OpHandle handle;
  const OpSite& site;
  std::vector<ParamGrad> pairs;  // in op_role_var order
  const Var& param(const ParamGrad& pair) const {
    return require_var(site, pair.param, "op_role_var param");
  }
  const Var& grad(const ParamGrad& pair) const {
    return require_var(site, pair.grad, "op_role_var grad");
  }
  // The same lookups, decoding nothing (Block::find_var_entry).
  Block::VarEntry param_entry(const ParamGrad& pair) const {
    return require_var_entry(site, pair.param, "op_role_var param");
  }
  Block::VarEntry grad_entry(const ParamGrad& pair) const {
    return require_var_entry(site, pair.grad, "op_role_var grad");
  }
  // The param as a copy, leaving a var held as bytes so (Block::copy_var).
  Var param_copy(const ParamGrad& pair) const {
    return require_var_copy(site, pair.param, "op_role_var param");
  }
};

enum class WalkOrder { kLastFirst, kFirstLast };

// visit(op) for every op whose role has the Backward bit and that has an
// op_role_var attribute.
void for_each_grad_op(Block& block, std::string_view pass, WalkOrder order,
                      const std::function<void(const GradOp&)>& visit);

}  // namespace ctp
