// Helpers shared by the CUDA kernels: the run's DeviceContext, inputs moved
// to the GPU on first use (fed or synthetic data arrives in host memory),
// and outputs allocated on the run's GPU.
#pragma once
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "executor/cuda/device_context.h"
#include "executor/runtime/kernel.h"
#include "ops/cuda/device_kernels.h"

namespace ctp {
// Tensor::data<T>() on FP16/BF16 tensors with the launchers' element types.
template <> constexpr DataType data_type_of<cuda::launch::Half>() { return DataType::FP16; }
template <> constexpr DataType data_type_of<cuda::launch::BFloat16>() { return DataType::BF16; }
}  // namespace ctp

namespace ctp::cuda {

// Calls f.template operator()<T>() with T = float, double, launch::Half or
// launch::BFloat16 for FP32, FP64, FP16 and BF16 (the kernels mixed
// precision runs in 16 bits); any other dtype is a ctp::Error naming the op
// and `what`.
template <typename F>
void dispatch_mixed(DataType dtype, const KernelContext& ctx, const char* what, F&& f) {
  switch (dtype) {
    case DataType::FP32: f.template operator()<float>(); return;
    case DataType::FP64: f.template operator()<double>(); return;
    case DataType::FP16: f.template operator()<launch::Half>(); return;
    case DataType::BF16: f.template operator()<launch::BFloat16>(); return;
    default:
      throw Error(ctx.where() + std::string(what) + " has dtype " +
                  std::string(to_string(dtype)) +
                  "; this CUDA kernel supports FP32, FP64, FP16 and BF16");
  }
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
// buffer when nothing changed (coalesce_tensor's views stay intact).
Tensor& device_output(KernelContext& ctx, std::string_view slot, std::size_t i, DataType dtype,
                      std::vector<int64_t> shape);

}  // namespace ctp::cuda
