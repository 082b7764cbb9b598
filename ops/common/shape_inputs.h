// What the CPU and CUDA kernels of reshape2 and shape share: reshape2's
// target shape given at run time, read from host copies of its inputs, and
// shape's output built on the host.
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

// `shape`'s output: X's dims as an INT32 host tensor [rank].
Tensor dims_tensor(const Shape& dims);

}  // namespace ctp
