#include "ops/cpu/broadcast.h"

#include "ops/cpu/cpu_kernel_util.h"

namespace ctp::cpu {
namespace {

std::vector<int64_t> strides_for(const std::vector<int64_t>& padded,
                                 const std::vector<int64_t>& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  for (std::size_t d = out.size(); d-- > 0;) {
    strides[d] = (padded[d] == 1 && out[d] != 1) ? 0 : stride;
    stride *= padded[d];
  }
  return strides;
}

}  // namespace

BroadcastPlan plan_broadcast(const KernelContext& ctx, const std::vector<int64_t>& x_shape,
                             const std::vector<int64_t>& y_shape, int64_t axis) {
  BroadcastPlan plan;
  if (x_shape == y_shape) {
    plan.out_shape = x_shape;
    plan.x_strides = plan.y_strides = strides_for(x_shape, x_shape);
    plan.same_shape = true;
    return plan;
  }
  const bool x_is_big = x_shape.size() >= y_shape.size();
  const std::vector<int64_t>& big = x_is_big ? x_shape : y_shape;
  std::vector<int64_t> small = x_is_big ? y_shape : x_shape;
  const auto mismatch = [&] {
    return Error(ctx.where() + "X " + shape_string(x_shape) + " and Y " +
                 shape_string(y_shape) + " do not broadcast with axis " + std::to_string(axis));
  };
  const int64_t rank_gap = static_cast<int64_t>(big.size() - small.size());
  if (axis == -1) axis = rank_gap;
  if (axis < 0 || axis > static_cast<int64_t>(big.size())) throw mismatch();
  // Older Paddle programs align a Y with trailing 1s (e.g. [3, 1] at axis 1 of
  // a rank-2 X): those trailing 1s are dropped.
  while (axis + static_cast<int64_t>(small.size()) > static_cast<int64_t>(big.size()) &&
         !small.empty() && small.back() == 1)
    small.pop_back();
  if (axis + static_cast<int64_t>(small.size()) > static_cast<int64_t>(big.size()))
    throw mismatch();
  std::vector<int64_t> padded(big.size(), 1);
  for (std::size_t i = 0; i < small.size(); ++i) padded[static_cast<std::size_t>(axis) + i] = small[i];

  plan.out_shape.resize(big.size());
  for (std::size_t d = 0; d < big.size(); ++d) {
    if (big[d] == padded[d] || padded[d] == 1) plan.out_shape[d] = big[d];
    else if (big[d] == 1) plan.out_shape[d] = padded[d];
    else throw mismatch();
  }
  std::vector<int64_t> big_strides = strides_for(big, plan.out_shape);
  std::vector<int64_t> small_strides = strides_for(padded, plan.out_shape);
  plan.x_strides = x_is_big ? big_strides : small_strides;
  plan.y_strides = x_is_big ? small_strides : big_strides;
  return plan;
}

}  // namespace ctp::cpu
