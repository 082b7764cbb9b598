// Helpers shared by the CUDA kernels: the run's DeviceContext, inputs moved
// to the GPU on first use (fed or synthetic data arrives in host memory),
// and outputs allocated on the run's GPU.
#pragma once
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

#include "executor/cuda/device_context.h"
#include "executor/runtime/kernel.h"
#include "ops/common/kernel_util.h"
#include "ops/cuda/device_kernels.h"

namespace ctp {
// Tensor::data<T>() on FP16/BF16 tensors with the launchers' element types.
template <> constexpr DataType data_type_of<cuda::launch::Half>() { return DataType::FP16; }
template <> constexpr DataType data_type_of<cuda::launch::BFloat16>() { return DataType::BF16; }
}  // namespace ctp

namespace ctp::cuda {

// FP32, FP64, FP16 and BF16 (the kernels mixed precision runs in 16 bits),
// with launch::Half and launch::BFloat16 for the 16-bit ones.
template <typename F>
void dispatch_mixed(DataType dtype, const KernelContext& ctx, const char* what, F&& f) {
  dispatch_dtype<float, double, launch::Half, launch::BFloat16>(dtype, ctx, what,
                                                                "this CUDA kernel",
                                                                std::forward<F>(f));
}

// 1/count as the kernels compute it for element type T (in float for FP32,
// FP16 and BF16, as the CPU kernels do), for reduce_mean and its gradient.
template <typename T>
double reciprocal(int64_t count) {
  if (count == 0) count = 1;
  if constexpr (std::is_same_v<T, double>) return 1.0 / static_cast<double>(count);
  else return static_cast<double>(1.0f / static_cast<float>(count));
}

// The run's DeviceContext, made current for the calling thread; throws
// ctp::Error naming the op when the run has none.
DeviceContext& device_context(KernelContext& ctx);

// The i-th input, moved to the run's GPU in the scope when it lives in host
// memory (once: the scope then holds the device copy).
Tensor& device_input(KernelContext& ctx, std::string_view slot, std::size_t i = 0);

// The i-th output resized to (dtype, shape) on the run's GPU; keeps its
// buffer when nothing changed (coalesce_tensor's views stay intact). A new
// buffer's bytes are not set (allocate_uninitialized_buffer): the kernel
// writes every element (or zero-fills it first).
Tensor& device_output(KernelContext& ctx, std::string_view slot, std::size_t i, DataType dtype,
                      std::vector<int64_t> shape);

}  // namespace ctp::cuda
