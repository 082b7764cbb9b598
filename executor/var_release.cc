#include "executor/var_release.h"

#include <unordered_map>

#include "executor/communicator_schedule.h"
#include "ops/schema/op_def.h"

namespace ctp {
namespace {

bool outlives_step(const Block& block, const std::string& name) {
  const Var* v = block.find_var(name);
  return v && (v->persistable || v->type == VarKind::FEED_MINIBATCH ||
               v->type == VarKind::FETCH_LIST);
}

// Ops whose vars keep their tensors: see the header.
bool pins_its_vars(const Op& op) { return op.type == "coalesce_tensor" || communicates(op); }

void add_names(const std::vector<Slot>& slots, std::unordered_set<std::string>& into) {
  for (const Slot& slot : slots)
    for (const std::string& name : slot.args) into.insert(name);
}

}  // namespace

BlockVarUses block_var_uses(const Block& block) {
  BlockVarUses uses;
  const OpRegistry& schemas = OpRegistry::global();
  const auto use = [&](const std::string& name, std::size_t index, bool elements, bool write) {
    auto [it, first] = uses.by_name.try_emplace(name);
    VarUses& u = it->second;
    if (first) {
      uses.order.push_back(name);
      u.first = index;
      u.read_before_written = !write;
    }
    u.last = index;
    if (elements) u.last_element_use = index;
    if (write && !u.first_write) u.first_write = index;
  };
  std::size_t index = 0;
  for (const Op& op : block.ops()) {
    const OpDef* schema = schemas.find(op.type);
    for (const Slot& slot : op.inputs()) {
      const bool shape_only = schema && schema->reads_only_shape_of(slot.name);
      for (const std::string& name : slot.args) use(name, index, !shape_only, false);
    }
    for (const Slot& slot : op.outputs())
      for (const std::string& name : slot.args) use(name, index, true, true);
    ++index;
  }
  return uses;
}

std::size_t VarReleasePlan::released_count() const {
  std::size_t n = 0;
  for (const auto& names : after_op) n += names.size();
  return n;
}

VarReleasePlan plan_var_release(const Program& program, int32_t block_idx,
                                const std::unordered_set<std::string>& keep) {
  const Block& block = program.block(block_idx);
  std::unordered_set<std::string> pinned = keep;
  for (const Block& other : program.blocks) {
    if (other.idx == block_idx) continue;
    for (const Op& op : other.ops()) {
      add_names(op.inputs(), pinned);
      add_names(op.outputs(), pinned);
    }
  }
  for (const Op& op : block.ops())
    if (pins_its_vars(op)) {
      add_names(op.inputs(), pinned);
      add_names(op.outputs(), pinned);
    }

  const BlockVarUses uses = block_var_uses(block);
  VarReleasePlan plan;
  plan.after_op.resize(block.op_count());
  plan.elements_after_op.resize(block.op_count());
  for (const std::string& name : uses.order) {
    const VarUses& u = uses.by_name.at(name);
    if (u.read_before_written || pinned.count(name) || outlives_step(block, name)) continue;
    plan.after_op[u.last].push_back(name);
    // Written before any read, so it has an element use.
    if (u.last_element_use && *u.last_element_use < u.last)
      plan.elements_after_op[*u.last_element_use].push_back(name);
  }
  return plan;
}

}  // namespace ctp
