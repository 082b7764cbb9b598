#include "transpilers/op_walk.h"

#include <iterator>

namespace ctp {

void for_each_op_reversed(Block& block, std::string_view pass,
                          const std::function<void(Block::OpHandle, const OpSite&)>& visit) {
  // Copies held from before the walk become ops it visits; those a visit
  // holds (Block::insert_op_copies) lie after where the walk is, where it
  // never goes back to, and stay held.
  Block::OpList& list = block.ops();
  std::size_t index = block.op_count();
  Block::OpHandle it = list.end();
  while (it != list.begin()) {
    --it;
    --index;
    const bool first = it == list.begin();
    const Block::OpHandle before = first ? it : std::prev(it);
    visit(it, OpSite{pass, block, index, *it});
    if (first) return;
    it = std::next(before);  // the next step moves back to `before`
  }
}

namespace {

void visit_if_grad_op(Block::OpHandle handle, const OpSite& site,
                      const std::function<void(const GradOp&)>& visit) {
  if (!is_backward_at(site) || !site.op.has_attr(kOpRoleVarAttr)) return;
  visit(GradOp{handle, site, param_grad_pairs_at(site)});
}

}  // namespace

void for_each_grad_op(Block& block, std::string_view pass, WalkOrder order,
                      const std::function<void(const GradOp&)>& visit) {
  if (order == WalkOrder::kLastFirst) {
    for_each_op_reversed(block, pass, [&](Block::OpHandle it, const OpSite& site) {
      visit_if_grad_op(it, site, visit);
    });
    return;
  }
  std::size_t index = 0;
  for (Block::OpHandle it = block.ops().begin(); it != block.ops().end(); ++index) {
    const Block::OpHandle after = std::next(it);
    visit_if_grad_op(it, OpSite{pass, block, index, *it}, visit);
    it = after;
  }
}

}  // namespace ctp
