// Helpers shared by the CUDA kernels: the run's DeviceContext, inputs moved
// to the GPU on first use (fed or synthetic data arrives in host memory),
// and outputs allocated on the run's GPU.
#pragma once
#include <cstdint>
#include <string_view>

#include "executor/cuda/device_context.h"
#include "executor/kernel.h"

namespace ctp::cuda {

// The run's DeviceContext, made current for the calling thread; throws
// ctp::Error naming the op when the run has none.
DeviceContext& device_context(KernelContext& ctx);

// The i-th input, moved to the run's GPU in the scope when it lives in host
// memory (once: the scope then holds the device copy).
Tensor& device_input(KernelContext& ctx, std::string_view slot, std::size_t i = 0);

// The i-th output resized to (dtype, shape) on the run's GPU; keeps its
// buffer when nothing changed (coalesce_tensor's views stay intact).
Tensor& device_output(KernelContext& ctx, std::string_view slot, std::size_t i, DataType dtype,
                      std::vector<int64_t> shape);

}  // namespace ctp::cuda
