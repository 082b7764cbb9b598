// What the CUDA batch kernels (executor/op_batching.h) share: each op of a
// run becomes one element-wise task, and the tasks go out in one
// multi-tensor launch per kind of task (dtypes, learning rate) instead of
// one launch per op.
#pragma once
#include <cstddef>
#include <map>
#include <vector>

#include "ops/cuda/device_kernels.h"

namespace ctp::cuda {

// One op's element-wise work, with what tells tasks that can share a
// launch apart (Key: ordered, e.g. a pair of dtypes).
template <typename Key>
struct BatchedTask {
  Key key;
  launch::TensorTask task;
  std::size_t a_bytes = 0, b_bytes = 0, out_bytes = 0;
};

struct TaskBytes {
  const void* a;
  std::size_t a_bytes;
  const void* b;
  std::size_t b_bytes;
  const void* out;
  std::size_t out_bytes;
};

// Whether a task writes memory that another task reads or writes. Ops that
// are independent by var name can still share memory through
// coalesce_tensor's views (a fused buffer and its parts); such a batch must
// keep its block order.
bool tasks_share_memory(const std::vector<TaskBytes>& tasks);

// Calls launch_group(key, tasks, count) once per key, with the tasks of that
// key in block order; when tasks share memory, once per task in block order
// instead (the order the ops would have run in alone).
template <typename Key, typename LaunchGroup>
void launch_batched(const std::vector<BatchedTask<Key>>& work, LaunchGroup&& launch_group) {
  std::vector<TaskBytes> bytes;
  bytes.reserve(work.size());
  for (const BatchedTask<Key>& w : work)
    bytes.push_back({w.task.a, w.a_bytes, w.task.b, w.b_bytes, w.task.out, w.out_bytes});
  if (tasks_share_memory(bytes)) {
    for (const BatchedTask<Key>& w : work) launch_group(w.key, &w.task, 1);
    return;
  }
  std::map<Key, std::vector<launch::TensorTask>> groups;
  for (const BatchedTask<Key>& w : work) groups[w.key].push_back(w.task);
  for (const auto& [key, tasks] : groups) launch_group(key, tasks.data(), tasks.size());
}

}  // namespace ctp::cuda
