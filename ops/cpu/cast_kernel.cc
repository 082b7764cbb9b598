// cast: converts X's elements to out_dtype (Paddle's static_cast semantics:
// floats to integers truncate toward zero). Floating-point values pass
// through float on their way to FP16/BF16, so FP32 -> FP16/BF16 rounds once
// to nearest even, as the CUDA kernel does.
#include <cmath>
#include <limits>

#include "ops/cpu/cpu_kernel_util.h"
#include "ops/schema/meta_tensor.h"

namespace ctp::cpu {
namespace {

bool castable(DataType d) {
  switch (d) {
    case DataType::FP32: case DataType::FP64: case DataType::FP16: case DataType::BF16:
    case DataType::INT32: case DataType::INT64: case DataType::INT16: case DataType::INT8:
    case DataType::UINT8: case DataType::BOOL:
      return true;
    default:
      return false;
  }
}

double load(const void* p, DataType d, int64_t i) {
  switch (d) {
    case DataType::FP32: return static_cast<const float*>(p)[i];
    case DataType::FP64: return static_cast<const double*>(p)[i];
    case DataType::FP16: return float16::to_float(static_cast<const uint16_t*>(p)[i]);
    case DataType::BF16: return bfloat16::to_float(static_cast<const uint16_t*>(p)[i]);
    case DataType::INT32: return static_cast<const int32_t*>(p)[i];
    case DataType::INT64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DataType::INT16: return static_cast<const int16_t*>(p)[i];
    case DataType::INT8: return static_cast<const int8_t*>(p)[i];
    case DataType::UINT8: return static_cast<const uint8_t*>(p)[i];
    default: return static_cast<const bool*>(p)[i] ? 1.0 : 0.0;
  }
}

// Toward zero; NaN gives 0 and values beyond I's range its limit, where a
// plain static_cast would be undefined.
template <typename I>
I truncate(double v) {
  if (std::isnan(v)) return I(0);
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

void store(void* p, DataType d, int64_t i, double v) {
  switch (d) {
    case DataType::FP32: static_cast<float*>(p)[i] = static_cast<float>(v); return;
    case DataType::FP64: static_cast<double*>(p)[i] = v; return;
    case DataType::FP16:
      static_cast<uint16_t*>(p)[i] = float16::from_float(static_cast<float>(v));
      return;
    case DataType::BF16:
      static_cast<uint16_t*>(p)[i] = bfloat16::from_float(static_cast<float>(v));
      return;
    case DataType::INT32: static_cast<int32_t*>(p)[i] = truncate<int32_t>(v); return;
    case DataType::INT64: static_cast<int64_t*>(p)[i] = truncate<int64_t>(v); return;
    case DataType::INT16: static_cast<int16_t*>(p)[i] = truncate<int16_t>(v); return;
    case DataType::INT8: static_cast<int8_t*>(p)[i] = truncate<int8_t>(v); return;
    case DataType::UINT8: static_cast<uint8_t*>(p)[i] = truncate<uint8_t>(v); return;
    default: static_cast<bool*>(p)[i] = v != 0.0; return;
  }
}

void cast(KernelContext& ctx) {
  const Tensor x = ctx.input("X");  // a handle: Out may be X
  const DataType out_dtype = meta::cast(ctx, meta_of(x)).out;
  for (DataType d : {x.dtype(), out_dtype})
    if (!castable(d))
      ctx.fail("cannot cast " + std::string(to_string(x.dtype())) + " to " +
               std::string(to_string(out_dtype)) + ": " + std::string(to_string(d)) +
               " is not a numeric dtype this CPU kernel converts");
  Tensor& out = ctx.output("Out");
  if (out_dtype == x.dtype()) {
    copy_tensor(x, out);
    return;
  }
  Tensor result(out_dtype, x.shape());
  const void* src = x.raw_data();
  void* dst = result.raw_data();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) store(dst, out_dtype, i, load(src, x.dtype(), i));
  if (out.initialized() && out.dtype() == out_dtype && out.shape() == x.shape()) {
    copy_tensor(result, out);  // keeps Out's buffer (a view stays a view)
  } else {
    out = std::move(result);
  }
}

}  // namespace

CTP_REGISTER_KERNEL(cast, CPU, cast);

}  // namespace ctp::cpu
