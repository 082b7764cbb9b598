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
  for (const Op& op : block.ops()) {
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

}  // namespace ctp
