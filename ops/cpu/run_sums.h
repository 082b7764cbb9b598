// RunSums: how the CPU kernels add many contributions into each element
// (gradients of broadcast inputs, reductions) in the order of
// ops/common/sum_order.h, which the CUDA kernels follow as well.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/common/sum_order.h"

namespace ctp::cpu {

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
