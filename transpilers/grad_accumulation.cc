#include "transpilers/grad_accumulation.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "ops/schema/grad_maker.h"
#include "program_ir/op_role.h"

namespace ctp {
namespace {

bool is_grad_name(const std::string& name) {
  return name.find(kGradVarSuffix) != std::string::npos;
}

std::string device_of(const Op& op) {
  const Attribute* device = op.attr("op_device");
  return device && device->type() == AttrType::STRING ? device->get<std::string>() : "";
}

// Paddle's sum of partial gradients (_accumulate_gradients_by_sum_op_).
Op make_sum(const std::vector<std::string>& parts, const std::string& var,
            const std::string& device) {
  return Op("sum", {{"X", parts}}, {{"Out", {var}}},
            {{"use_mkldnn", Attribute(false)},
             {"op_device", Attribute(device)},
             {kOpRoleAttr, Attribute(op_role::kBackward)}});
}

// The partial gradients of each grad var, in the order Paddle's
// defaultdict first sees the names (which orders the sums at the end).
class PartialGrads {
 public:
  std::vector<std::string>& of(const std::string& var) {
    auto [it, added] = parts_.try_emplace(var);
    if (added) order_.push_back(var);
    return it->second;
  }
  const std::vector<std::string>& order() const { return order_; }
  std::string next_name(const std::string& var, int32_t block_idx) {
    return var + "@RENAME@block" + std::to_string(block_idx) + "@" +
           std::to_string(rename_count_[var]++);
  }
  std::unordered_map<std::string, std::size_t> first_writer;
  std::unordered_map<std::string, std::string> device;

 private:
  std::unordered_map<std::string, std::vector<std::string>> parts_;
  std::vector<std::string> order_;
  std::unordered_map<std::string, int> rename_count_;
};

using PendingSums = std::map<std::size_t, std::vector<Op>>;

// The var's first partial gradient, written so far as the var itself by
// ops[first_writer..idx) and by the slots of ops[idx] before (slot, arg),
// takes its @RENAME@ name.
void rename_first_partial(std::vector<Op>& ops, PendingSums& pending, PartialGrads& partials,
                          const std::string& var, std::size_t idx, std::size_t slot,
                          std::size_t arg, int32_t block_idx) {
  std::vector<std::string>& parts = partials.of(var);
  const std::string first = partials.next_name(var, block_idx);
  parts[0] = first;
  for (std::size_t i = partials.first_writer[var]; i < idx; ++i) rename_arg(ops[i], var, first);
  for (auto& [at, sums] : pending)
    for (Op& sum : sums) rename_arg(sum, var, first);
  std::vector<Slot>& outputs = ops[idx].mutable_outputs();
  for (std::size_t s = 0; s <= slot; ++s) {
    std::vector<std::string>& args = outputs[s].args;
    const std::size_t end = s == slot ? arg : args.size();
    for (std::size_t a = 0; a < end; ++a)
      if (args[a] == var) args[a] = first;
  }
}

}  // namespace

void rename_arg(Op& op, const std::string& from, const std::string& to) {
  // Editing the slots decodes them for good (op.h): only an op that names
  // `from` is edited.
  auto names = [&](const std::vector<Slot>& side) {
    for (const Slot& slot : side)
      if (std::find(slot.args.begin(), slot.args.end(), from) != slot.args.end()) return true;
    return false;
  };
  if (!names(op.inputs()) && !names(op.outputs())) return;
  for (std::vector<Slot>* side : {&op.mutable_inputs(), &op.mutable_outputs()})
    for (Slot& slot : *side)
      for (std::string& arg : slot.args)
        if (arg == from) arg = to;
}

void add_up_repeated_grads(std::vector<Op>& ops, int32_t block_idx) {
  PendingSums pending;
  PartialGrads partials;
  for (std::size_t idx = 0; idx < ops.size(); ++idx) {
    const std::vector<std::string> inputs = ops[idx].input_arg_names();
    for (const std::string& var : inputs) {
      if (!is_grad_name(var)) continue;
      std::vector<std::string>& parts = partials.of(var);
      if (parts.size() > 1) {
        pending[idx].push_back(make_sum(parts, var, partials.device[var]));
        parts = {var};
      }
    }
    const std::string device = device_of(ops[idx]);
    for (std::size_t s = 0; s < ops[idx].outputs().size(); ++s)
      for (std::size_t a = 0; a < ops[idx].outputs()[s].args.size(); ++a) {
        const std::string var = ops[idx].outputs()[s].args[a];
        if (!is_grad_name(var) || var == kEmptyVarName) continue;
        bool in_place = false;
        for (const std::string& in : inputs) in_place |= in == var;
        if (in_place) continue;
        if (partials.of(var).empty()) {
          partials.of(var) = {var};
          partials.first_writer[var] = idx;
          continue;
        }
        if (partials.of(var).size() == 1)
          rename_first_partial(ops, pending, partials, var, idx, s, a, block_idx);
        const std::string next = partials.next_name(var, block_idx);
        ops[idx].mutable_outputs()[s].args[a] = next;
        partials.of(var).push_back(next);
        partials.device[var] = device;
      }
  }
  for (const std::string& var : partials.order()) {
    std::vector<std::string>& parts = partials.of(var);
    if (parts.size() > 1) {
      pending[ops.size()].push_back(make_sum(parts, var, partials.device[var]));
      parts = {var};
    }
  }
  // From the back, so that earlier positions stay right.
  for (auto it = pending.rbegin(); it != pending.rend(); ++it)
    ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(it->first), it->second.begin(),
               it->second.end());
}

void remove_no_grad_branches(std::vector<Op>& ops, std::unordered_set<std::string>& no_grad) {
  auto all_in = [&](const std::vector<std::string>& names) {
    for (const std::string& n : names)
      if (!no_grad.contains(n)) return false;
    return true;
  };
  std::vector<Op> kept;
  for (Op& op : ops) {
    const std::vector<std::string> outputs = op.output_arg_names();
    if (outputs.empty() || all_in(outputs)) continue;
    std::vector<std::string> grad_inputs;
    for (const std::string& in : op.input_arg_names())
      if (is_grad_name(in)) grad_inputs.push_back(in);
    if (!grad_inputs.empty() && all_in(grad_inputs)) {
      no_grad.insert(outputs.begin(), outputs.end());
      continue;
    }
    kept.push_back(std::move(op));
  }
  // A gradient that is read but will never be written reads zeros.
  std::vector<Op> result;
  for (Op& op : kept) {
    for (const std::string& in : op.input_arg_names())
      if (is_grad_name(in) && no_grad.contains(in))
        result.push_back(Op("fill_zeros_like", {{"X", {std::string(strip_grad_suffix(in))}}},
                            {{"Out", {in}}},
                            {{kOpRoleAttr, Attribute(op_role::kBackward)},
                             {"op_device", Attribute("")}}));
    result.push_back(std::move(op));
  }
  ops = std::move(result);
}

}  // namespace ctp
