// What the CPU and CUDA coalesce_tensor kernels share: the layout of the
// inputs in FusedOutput (under the op's rules, meta::coalesce_tensor) and
// whether the outputs already are views of it, so that a step after the
// first copies nothing that was produced in place.
#pragma once
#include <cstddef>
#include <vector>

#include "executor/runtime/kernel.h"
#include "ops/schema/meta_tensor.h"

namespace ctp {

struct CoalescePlan {
  meta::CoalesceMeta layout;
  std::vector<std::vector<int64_t>> shapes;  // of each chunk
  std::vector<int64_t> fused_shape;          // {elements of FusedOutput}
  bool copy_data = false;
  bool set_constant = false;
  double constant = 0.0;
};

// The layout with chunks aligned to `default_alignment` bytes unless the op
// sets align_size. An input's shape is its tensor's or, before it exists
// (set_constant needs no data), its declared one, which must then be known.
CoalescePlan plan_coalesce(KernelContext& ctx, std::size_t default_alignment);

// Whether FusedOutput (on `device`) and every Output already are that
// layout: then nothing is reallocated.
bool layout_is_current(KernelContext& ctx, const CoalescePlan& plan, const Device& device);

}  // namespace ctp
