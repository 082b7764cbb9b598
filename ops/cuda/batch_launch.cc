#include "ops/cuda/batch_launch.h"

#include <algorithm>
#include <cstdint>

namespace ctp::cuda {

bool tasks_share_memory(const std::vector<TaskBytes>& tasks) {
  struct Range {
    uintptr_t begin, end;
    std::size_t task;
    bool write;
  };
  std::vector<Range> ranges;
  ranges.reserve(tasks.size() * 3);
  const auto add = [&](const void* p, std::size_t bytes, std::size_t task, bool write) {
    if (!p || bytes == 0) return;
    const auto begin = reinterpret_cast<uintptr_t>(p);
    ranges.push_back({begin, begin + bytes, task, write});
  };
  for (std::size_t k = 0; k < tasks.size(); ++k) {
    add(tasks[k].a, tasks[k].a_bytes, k, false);
    add(tasks[k].b, tasks[k].b_bytes, k, false);
    add(tasks[k].out, tasks[k].out_bytes, k, true);
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& x, const Range& y) { return x.begin < y.begin; });
  // The ranges that reach past the current one's start; disjoint tensors
  // keep this to a task's own operands.
  std::vector<Range> open;
  for (const Range& r : ranges) {
    open.erase(std::remove_if(open.begin(), open.end(),
                              [&](const Range& o) { return o.end <= r.begin; }),
               open.end());
    for (const Range& o : open)
      if (o.task != r.task && (o.write || r.write)) return true;
    open.push_back(r);
  }
  return false;
}

}  // namespace ctp::cuda
