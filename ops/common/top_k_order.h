// The order top_k picks its k elements in, shared by the CPU and CUDA
// kernels so both pick the same elements in the same order: by value
// (descending when `largest`, else ascending), NaN above every number (first
// when largest, last otherwise, as Paddle's CPU kernel places it), equal
// values (NaNs included) by lower index first. A strict total order on
// (value, index) pairs: the CUDA kernel finds the next pick as the first
// element after the previous one.
#pragma once
#include <cstdint>

#include "ops/common/host_device.h"

namespace ctp::top_k_order {

// Whether value a ranks above value b (a NaN ranks above every number).
template <typename C>
CTP_HOST_DEVICE inline bool value_above(C a, C b) {
  const bool a_nan = a != a, b_nan = b != b;
  if (a_nan || b_nan) return a_nan && !b_nan;
  return a > b;
}

// Whether (a, ia) comes before (b, ib) in top_k's output.
template <typename C>
CTP_HOST_DEVICE inline bool before(C a, int64_t ia, C b, int64_t ib, bool largest) {
  if (largest ? value_above(a, b) : value_above(b, a)) return true;
  if (largest ? value_above(b, a) : value_above(a, b)) return false;
  return ia < ib;  // equal values, or both NaN
}

}  // namespace ctp::top_k_order
