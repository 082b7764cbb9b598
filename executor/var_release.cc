#include "executor/var_release.h"

#include <unordered_map>

#include "executor/communicator_schedule.h"

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
      add_names(op.inputs, pinned);
      add_names(op.outputs, pinned);
    }
  }
  for (const Op& op : block.ops())
    if (pins_its_vars(op)) {
      add_names(op.inputs, pinned);
      add_names(op.outputs, pinned);
    }

  // The last op naming each var, and whether an op read it before any wrote it.
  std::unordered_map<std::string, std::size_t> last_use;
  std::vector<std::string> order;  // first-use order, for a stable plan
  std::unordered_set<std::string> written;
  std::size_t index = 0;
  for (const Op& op : block.ops()) {
    for (const Slot& slot : op.inputs)
      for (const std::string& name : slot.args) {
        if (!written.count(name) && !last_use.count(name)) pinned.insert(name);  // read first
        if (last_use.emplace(name, index).second) order.push_back(name);
        last_use[name] = index;
      }
    for (const Slot& slot : op.outputs)
      for (const std::string& name : slot.args) {
        written.insert(name);
        if (last_use.emplace(name, index).second) order.push_back(name);
        last_use[name] = index;
      }
    ++index;
  }

  VarReleasePlan plan;
  plan.after_op.resize(block.op_count());
  for (const std::string& name : order)
    if (!pinned.count(name) && !outlives_step(block, name))
      plan.after_op[last_use.at(name)].push_back(name);
  return plan;
}

}  // namespace ctp
