// What the CPU and CUDA kernels of clip and dropout read beyond their
// tensors, in one place: clip's bounds (the Min/Max tensors or the
// attributes) and dropout's seed (the Seed tensor, the seed attribute, or a
// fresh one). Tensors are passed as host copies (a CUDA kernel copies its
// one-element inputs back first).
#pragma once
#include <cstdint>

#include "executor/runtime/kernel.h"
#include "ops/schema/meta_activation.h"

namespace ctp {

struct ClipBounds {
  double min, max;
};
// Min/Max (null when absent) win over the attributes; fails unless min <= max.
ClipBounds clip_bounds(const KernelContext& ctx, const Tensor* min_host, const Tensor* max_host);

// The Seed tensor's value when given, else the seed attribute when fix_seed,
// else a fresh seed from std::random_device (a different mask each run, as
// Paddle's unseeded dropout).
uint64_t dropout_seed(const meta::DropoutMeta& rules, const Tensor* seed_host);

}  // namespace ctp
