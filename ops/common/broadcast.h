// Paddle's elementwise broadcasting: Y's dims line up with X's starting at
// `axis` (-1: aligned to the trailing dims), roles swap when Y has the higher
// rank, and then any dim of size 1 stretches to the other's size (numpy).
#pragma once
#include <cstdint>
#include <vector>

#include "executor/runtime/kernel.h"
#include "ops/common/sum_order.h"

namespace ctp::cpu {

struct BroadcastPlan {
  std::vector<int64_t> out_shape;
  // Element strides of X and Y over out_shape's dims; 0 where they broadcast.
  std::vector<int64_t> x_strides;
  std::vector<int64_t> y_strides;
  bool same_shape = false;  // X, Y and Out have one shape: plain element loops
};

// Throws ctp::Error naming the op and both shapes when they do not broadcast.
BroadcastPlan plan_broadcast(const KernelContext& ctx, const std::vector<int64_t>& x_shape,
                             const std::vector<int64_t>& y_shape, int64_t axis);

// Calls f(out_offset, x_offset, y_offset) for every element of the output, in
// row-major order.
template <typename F>
void for_each_broadcast(const BroadcastPlan& plan, F&& f) {
  const std::size_t rank = plan.out_shape.size();
  int64_t total = 1;
  for (int64_t d : plan.out_shape) total *= d;
  if (total == 0) return;
  if (rank == 0) {
    f(int64_t{0}, int64_t{0}, int64_t{0});
    return;
  }
  const int64_t inner = plan.out_shape[rank - 1];
  const int64_t xs = plan.x_strides[rank - 1];
  const int64_t ys = plan.y_strides[rank - 1];
  std::vector<int64_t> index(rank, 0);
  int64_t x_base = 0, y_base = 0;
  for (int64_t out = 0; out < total; out += inner) {
    for (int64_t j = 0; j < inner; ++j) f(out + j, x_base + j * xs, y_base + j * ys);
    // Advance the multi-index over all but the innermost dim.
    for (std::size_t d = rank - 1; d-- > 0;) {
      x_base += plan.x_strides[d];
      y_base += plan.y_strides[d];
      if (++index[d] < plan.out_shape[d]) break;
      x_base -= plan.x_strides[d] * plan.out_shape[d];
      y_base -= plan.y_strides[d] * plan.out_shape[d];
      index[d] = 0;
    }
  }
}

// Sums many contributions into each element of `total` (zero-filled) in
// the order of ops/common/sum_order.h: runs of kSumRun, added in order.
template <typename T>
class RunSums {
 public:
  // `per_element`: how many contributions each of the n elements gets (a
  // broadcast gives every element as many); up to kSumRun they go straight
  // into `total`, which is then the same sum.
  RunSums(T* total, int64_t n, int64_t per_element)
      : total_(total), in_runs_(per_element > kSumRun) {
    if (!in_runs_) return;
    run_.assign(static_cast<std::size_t>(n), T(0));
    count_.assign(static_cast<std::size_t>(n), 0);
  }
  RunSums(const RunSums&) = delete;
  RunSums& operator=(const RunSums&) = delete;
  ~RunSums() {
    for (std::size_t j = 0; j < run_.size(); ++j)
      if (count_[j] != 0) total_[j] += run_[j];
  }

  void add(int64_t j, T value) {
    if (!in_runs_) {
      total_[j] += value;
      return;
    }
    const auto k = static_cast<std::size_t>(j);
    run_[k] += value;
    if (++count_[k] == kSumRun) {
      total_[k] += run_[k];
      run_[k] = T(0);
      count_[k] = 0;
    }
  }

 private:
  T* total_;
  bool in_runs_;
  std::vector<T> run_;
  std::vector<int64_t> count_;
};

}  // namespace ctp::cpu
