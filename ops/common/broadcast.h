// How kernels on every device walk a broadcast: the element strides of X and
// Y over Out's dims, from the shapes an op's rules aligned (meta::Broadcast,
// which also did all the checking), and a row-major walk over them for the
// host. reduce_mean is the same walk with Out's strides on the Y side.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/schema/meta_math.h"

namespace ctp {

struct BroadcastPlan {
  std::vector<int64_t> out_shape;
  // Element strides of X and Y over out_shape's dims; 0 where they broadcast.
  std::vector<int64_t> x_strides;
  std::vector<int64_t> y_strides;
  bool same_shape = false;  // X, Y and Out have one shape: plain element loops
};

BroadcastPlan plan_broadcast(const meta::Broadcast& shapes);

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

// reduce_mean as a walk over X: X's own strides on the X side, Out's (0 on
// the reduced dims) on the Y side.
struct Reduction {
  BroadcastPlan plan;
  // Out's shape as kernels store it: a full reduction without keep_dim is
  // [1], as Paddle stored it before 2.5, where the rules say 0-D.
  std::vector<int64_t> out_shape;
  int64_t count = 1;  // elements of X per element of Out
};
Reduction plan_reduction(const meta::ReduceMeta& rules, const std::vector<int64_t>& x_shape);

}  // namespace ctp
