// The shape the initializers (fill_constant, uniform_random,
// gaussian_random) write, as the CPU and CUDA kernels read it at run time.
#pragma once
#include <cstdint>
#include <vector>

#include "executor/runtime/kernel.h"

namespace ctp {

// The ShapeTensor input's values, else the ShapeTensorList inputs' values,
// else the `shape` attribute (Paddle's precedence); fails naming the op when
// a dim is negative (a batch dim never set). The shape tensors are read on
// the host.
std::vector<int64_t> initializer_shape(KernelContext& ctx);

}  // namespace ctp
