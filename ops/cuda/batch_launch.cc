#include "ops/cuda/batch_launch.h"

#include <algorithm>
#include <cstdint>

#include "program_ir/error.h"

namespace ctp::cuda {

TaskBytes& TaskBytes::add(const void* p, std::size_t bytes, bool write) {
  if (count_ == ranges_.size()) throw Error("a batched task touches more than 12 tensors");
  ranges_[count_++] = {p, bytes, write};
  return *this;
}

bool tasks_share_memory(std::size_t count,
                        const std::function<const TaskBytes&(std::size_t)>& task) {
  struct Range {
    uintptr_t begin, end;
    std::size_t task;
    bool write;
  };
  std::vector<Range> ranges;
  ranges.reserve(count * 3);
  for (std::size_t k = 0; k < count; ++k)
    for (const TaskBytes::Range& r : task(k)) {
      if (!r.begin || r.bytes == 0) continue;
      const auto begin = reinterpret_cast<uintptr_t>(r.begin);
      ranges.push_back({begin, begin + r.bytes, k, r.write});
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
