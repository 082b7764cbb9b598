// What the CPU and CUDA kernels of reshape2 share: its target shape given
// at run time, read from host copies of its inputs.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "executor/runtime/kernel.h"

namespace ctp {

// A host copy of input `slot`'s i-th tensor (a CUDA kernel copies it back).
using HostInput = std::function<Tensor(std::string_view slot, std::size_t i)>;

// reshape2's shape from ShapeTensor (one INT32/INT64 element per dim; it
// wins, as in Paddle) or Shape (a 1-D INT32/INT64 tensor); nullopt when the
// op has neither (the attribute gives it).
std::optional<std::vector<int64_t>> runtime_shape(const KernelContext& ctx, const HostInput& host);

}  // namespace ctp
