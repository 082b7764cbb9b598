// What the CUDA batch kernels (executor/op_batching.h) share: each op of a
// run becomes one task, and the tasks go out in one multi-tensor launch per
// kind of task (dtypes, learning rate, attributes) instead of one launch
// per op.
#pragma once
#include <array>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "executor/runtime/kernel.h"
#include "ops/cuda/device_kernels.h"

namespace ctp::cuda {

// The device memory one task reads and writes.
class TaskBytes {
 public:
  struct Range {
    const void* begin = nullptr;
    std::size_t bytes = 0;
    bool write = false;
  };
  TaskBytes& reads(const void* p, std::size_t bytes) { return add(p, bytes, false); }
  TaskBytes& writes(const void* p, std::size_t bytes) { return add(p, bytes, true); }
  const Range* begin() const { return ranges_.data(); }
  const Range* end() const { return ranges_.data() + count_; }

 private:
  TaskBytes& add(const void* p, std::size_t bytes, bool write);
  std::array<Range, 12> ranges_{};
  std::size_t count_ = 0;
};

// Whether a task writes memory that another task reads or writes. Ops that
// are independent by var name can still share memory through
// coalesce_tensor's views (a fused buffer and its parts); such a batch must
// keep its block order. task(k) gives task k's bytes, k < count.
bool tasks_share_memory(std::size_t count, const std::function<const TaskBytes&(std::size_t)>& task);
inline bool tasks_share_memory(const std::vector<TaskBytes>& tasks) {
  return tasks_share_memory(tasks.size(), [&](std::size_t k) -> const TaskBytes& { return tasks[k]; });
}

// One op's work (Task: launch::TensorTask, launch::OptimizerTask), with
// what tells tasks that can share a launch apart (Key: ordered).
template <typename Key, typename Task = launch::TensorTask>
struct BatchedTask {
  Key key;
  Task task;
  TaskBytes bytes;
};

// Calls launch_group(key, tasks, count) once per key, with the tasks of that
// key in block order; when tasks share memory, once per task in block order
// instead (the order the ops would have run in alone).
template <typename Key, typename Task, typename LaunchGroup>
void launch_batched(const std::vector<BatchedTask<Key, Task>>& work, LaunchGroup&& launch_group) {
  if (tasks_share_memory(work.size(),
                         [&](std::size_t k) -> const TaskBytes& { return work[k].bytes; })) {
    for (const BatchedTask<Key, Task>& w : work) launch_group(w.key, &w.task, 1);
    return;
  }
  std::map<Key, std::vector<Task>> groups;
  for (const BatchedTask<Key, Task>& w : work) groups[w.key].push_back(w.task);
  for (const auto& [key, tasks] : groups) launch_group(key, tasks.data(), tasks.size());
}

template <typename T>
std::optional<T> as_optional(T value) {
  return value;
}
template <typename T>
std::optional<T> as_optional(std::optional<T> value) {
  return value;
}

// An op type's kernels from two functions: prepare(ctx) checks the op,
// sizes its outputs and returns its BatchedTask (or std::nullopt when it did
// the op's work itself, as a cast to the same dtype), and
// launch_group(ctx, key, tasks, count) launches tasks of one key. run_one is
// the single kernel, run_batch the batch kernel (one launch per key).
template <auto prepare, auto launch_group>
void run_one(KernelContext& ctx) {
  if (auto work = as_optional(prepare(ctx))) launch_group(ctx, work->key, &work->task, 1);
}

template <auto prepare, auto launch_group>
void run_batch(std::vector<KernelContext>& ops) {
  using Work = typename decltype(as_optional(prepare(ops.front())))::value_type;
  std::vector<Work> work;
  work.reserve(ops.size());
  for (KernelContext& ctx : ops)
    if (auto w = as_optional(prepare(ctx))) work.push_back(std::move(*w));
  launch_batched(work, [&](const auto& key, const auto* tasks, std::size_t count) {
    launch_group(ops.front(), key, tasks, count);
  });
}

}  // namespace ctp::cuda
