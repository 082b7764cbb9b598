#include "executor/op_batching.h"

#include <string>
#include <unordered_set>

namespace ctp {
namespace {

class RunBuilder {
 public:
  // Whether `op` may join the run after what it already holds.
  bool independent(const Op& op) const {
    for (const Slot& slot : op.inputs())
      for (const std::string& name : slot.args)
        if (written_.count(name)) return false;
    for (const Slot& slot : op.outputs())
      for (const std::string& name : slot.args)
        if (written_.count(name) || read_.count(name)) return false;
    return true;
  }
  void add(const Op& op) {
    for (const Slot& slot : op.inputs()) read_.insert(slot.args.begin(), slot.args.end());
    for (const Slot& slot : op.outputs()) written_.insert(slot.args.begin(), slot.args.end());
  }
  void clear() {
    read_.clear();
    written_.clear();
  }

 private:
  std::unordered_set<std::string> read_, written_;
};

}  // namespace

std::vector<OpRun> independent_op_runs(const Block& block,
                                       const std::function<bool(const Op&)>& batchable) {
  std::vector<std::size_t> order(block.op_count());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  return independent_op_runs(block, order, batchable);
}

std::vector<OpRun> independent_op_runs(const Block& block, const std::vector<std::size_t>& order,
                                       const std::function<bool(const Op&)>& batchable) {
  std::vector<const Op*> ops;
  ops.reserve(block.op_count());
  for (const Op& op : block.ops()) ops.push_back(&op);
  std::vector<OpRun> runs;
  RunBuilder run;
  OpRun current;
  const std::string* run_type = nullptr;
  const auto close = [&] {
    if (current.count >= 2) runs.push_back(current);
    current = OpRun{};
    run_type = nullptr;
    run.clear();
  };
  std::size_t i = 0;
  for (const std::size_t index : order) {
    const Op& op = *ops.at(index);
    if (!batchable(op)) {
      close();
    } else {
      if (!run_type || *run_type != op.type || !run.independent(op)) {
        close();
        current.first = i;
        run_type = &op.type;
      }
      run.add(op);
      ++current.count;
    }
    ++i;
  }
  close();
  return runs;
}

namespace {

std::vector<const std::string*> vars_of(const Op& op) {
  std::vector<const std::string*> out;
  for (const auto* slots : {&op.inputs(), &op.outputs()})
    for (const Slot& slot : *slots)
      for (const std::string& name : slot.args) out.push_back(&name);
  return out;
}

}  // namespace

std::vector<std::size_t> gathering_order(const Block& block,
                                         const std::function<bool(const Op&)>& gather,
                                         const std::function<bool(const Op&)>& barrier) {
  std::vector<const Op*> ops;
  for (const Op& op : block.ops()) ops.push_back(&op);
  const auto shares = [](const Op& op, const std::unordered_set<std::string>& vars) {
    for (const std::string* name : vars_of(op))
      if (vars.count(*name)) return true;
    return false;
  };
  const auto add = [](const Op& op, std::unordered_set<std::string>& vars) {
    for (const std::string* name : vars_of(op)) vars.insert(*name);
  };
  // To the front: gathered ops that touch nothing an earlier op touches.
  std::vector<std::size_t> order, rest;
  std::unordered_set<std::string> touched;
  bool after_barrier = false;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = *ops[i];
    const bool is_barrier = barrier(op);
    if (!after_barrier && !is_barrier && gather(op) && !shares(op, touched)) order.push_back(i);
    else rest.push_back(i);
    add(op, touched);
    after_barrier |= is_barrier;
  }
  // The others wait for the first op that needs them.
  std::vector<std::size_t> waiting;
  std::unordered_set<std::string> waiting_vars;
  const auto flush = [&] {
    order.insert(order.end(), waiting.begin(), waiting.end());
    waiting.clear();
    waiting_vars.clear();
  };
  for (const std::size_t i : rest) {
    const Op& op = *ops[i];
    const bool is_barrier = barrier(op);
    if (is_barrier || shares(op, waiting_vars)) flush();
    if (!is_barrier && gather(op)) {
      waiting.push_back(i);
      add(op, waiting_vars);
    } else {
      order.push_back(i);
    }
  }
  flush();
  return order;
}

}  // namespace ctp
