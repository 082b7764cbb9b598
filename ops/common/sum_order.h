// The one summation order of every reduction kernel, CPU and CUDA alike
// (elementwise gradients, reduce_mean): the contributions to one output
// element, in the order the CPU visits them (row-major over the op's
// output), are added left to right in runs of kSumRun, and the run sums are
// added to the element in order. Up to kSumRun contributions this is the
// plain left-to-right sum. A GPU sums the runs of a long column in parallel
// and still agrees with the CPU bit for bit, and a long sum's rounding
// error grows with about n / kSumRun + kSumRun additions instead of n.
#pragma once
#include <cstdint>

namespace ctp {
inline constexpr int64_t kSumRun = 64;
}  // namespace ctp
