// Helpers of the CPU kernels: filling and copying host tensors (and, from
// ops/common and ops/schema, what they share with the CUDA kernels).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "executor/runtime/float16.h"
#include "executor/runtime/kernel.h"
#include "ops/common/kernel_util.h"
#include "ops/schema/shape_rules.h"

namespace ctp::cpu {

// Sets every element of `t` (any of FP32, FP64, FP16, BF16, INT32, INT64,
// BOOL, UINT8, INT8, INT16) to `value`, converted to its dtype.
void fill(Tensor& t, double value);
// Copies src's elements into dst (resized to src's dtype and shape first
// unless both are the same tensor or already share that memory).
void copy_tensor(const Tensor& src, Tensor& dst);

}  // namespace ctp::cpu
