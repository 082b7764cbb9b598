// FP16 and BF16 on the CPU: the op's FP32 kernel runs on float copies of the
// 16-bit inputs and each output is rounded back once (as Paddle's
// half-precision kernels compute in float), so a 16-bit result is the
// FP32 result rounded, and the CUDA kernels, which do the same, agree with it.
#pragma once
#include <string>
#include <vector>

#include "executor/runtime/kernel.h"

namespace ctp::cpu {

// A kernel that passes FP32/FP64 inputs straight to `fp32_kernel` and runs
// it on float copies when the inputs are FP16 or BF16, rounding its FP32
// outputs to that dtype (into the outputs' existing buffers, so
// coalesce_tensor's views stay intact). Every floating-point input must then
// have that one 16-bit dtype, except those of `scalar_slots` (ScaleTensor),
// which may have any; otherwise a ctp::Error names the op, var and dtypes.
// Outputs of `fp32_outputs` (layer_norm's statistics, kept in FP32 as its
// Scale and Bias are) are not rounded.
KernelFn computed_in_float(KernelFn fp32_kernel, std::vector<std::string> scalar_slots = {},
                           std::vector<std::string> fp32_outputs = {});

// Float copies of FP16/BF16 tensors and back (round to nearest even).
Tensor widen_to_float(const Tensor& t);
void round_into(const Tensor& fp32, DataType dtype, Tensor& out);

}  // namespace ctp::cpu
