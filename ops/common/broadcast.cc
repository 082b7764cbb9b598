#include "ops/common/broadcast.h"

namespace ctp {
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

BroadcastPlan plan_broadcast(const meta::Broadcast& shapes) {
  BroadcastPlan plan;
  plan.out_shape = shapes.out_shape;
  plan.x_strides = strides_for(shapes.x, shapes.out_shape);
  plan.y_strides = strides_for(shapes.y, shapes.out_shape);
  plan.same_shape = shapes.same_shape;
  return plan;
}

Reduction plan_reduction(const meta::ReduceMeta& rules, const std::vector<int64_t>& x_shape) {
  Reduction r;
  r.plan.out_shape = x_shape;
  r.plan.x_strides.assign(x_shape.size(), 0);
  r.plan.y_strides.assign(x_shape.size(), 0);
  int64_t x_stride = 1, out_stride = 1;
  for (std::size_t d = x_shape.size(); d-- > 0;) {
    r.plan.x_strides[d] = x_stride;
    x_stride *= x_shape[d];
    if (rules.reduced[d]) {
      r.count *= x_shape[d];
    } else {
      r.plan.y_strides[d] = out_stride;
      out_stride *= x_shape[d];
    }
  }
  r.out_shape = rules.out_shape;
  if (r.out_shape.empty()) r.out_shape = {1};
  return r;
}

}  // namespace ctp
