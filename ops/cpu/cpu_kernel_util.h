// Helpers shared by the CPU kernels: dtype dispatch, dtype attributes, 16-bit
// float conversions, scalars and shape arithmetic.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "executor/runtime/float16.h"
#include "executor/runtime/kernel.h"

namespace ctp::cpu {

// Calls f.template operator()<T>() with T = float or double for FP32/FP64;
// any other dtype is a ctp::Error naming the op and `what`. (FP16/BF16 reach
// only the kernels that take them, wrapped in cpu::computed_in_float; the
// CUDA loss and optimizer kernels use this dispatch too, hence "this kernel".)
template <typename F>
void dispatch_float(DataType dtype, const KernelContext& ctx, const char* what, F&& f) {
  switch (dtype) {
    case DataType::FP32: f.template operator()<float>(); return;
    case DataType::FP64: f.template operator()<double>(); return;
    default:
      throw Error(ctx.where() + std::string(what) + " has dtype " +
                  std::string(to_string(dtype)) + "; this kernel supports FP32 and FP64");
  }
}

// The element type an INT attribute names by its VarType number; `fallback`
// when the attribute is absent or negative (Paddle's "same as input").
DataType dtype_attr(const KernelContext& ctx, const char* name, DataType fallback);

// Sets every element of `t` (any of FP32, FP64, FP16, BF16, INT32, INT64,
// BOOL, UINT8, INT8, INT16) to `value`, converted to its dtype.
void fill(Tensor& t, double value);
// The first element of a numeric tensor as a double (learning rates, beta
// powers and other one-element inputs of any float or integer dtype).
double scalar_value(const Tensor& t);

int64_t product(const std::vector<int64_t>& shape, std::size_t begin, std::size_t end);
inline int64_t product(const std::vector<int64_t>& shape) {
  return product(shape, 0, shape.size());
}
std::string shape_string(const std::vector<int64_t>& shape);
// An axis in [-rank, rank) made non-negative; ctp::Error naming the op otherwise.
int64_t normalize_axis(const KernelContext& ctx, int64_t axis, std::size_t rank, const char* what);

// Copies src's elements into dst (resized to src's dtype and shape first
// unless both are the same tensor or already share that memory).
void copy_tensor(const Tensor& src, Tensor& dst);

}  // namespace ctp::cpu
