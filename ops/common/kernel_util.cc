#include "ops/common/kernel_util.h"

#include "executor/runtime/float16.h"

namespace ctp {

double scalar_value(const Tensor& t) {
  if (t.numel() < 1) throw Error("expected a one-element tensor, got an empty one");
  const void* p = t.raw_data();
  switch (t.dtype()) {
    case DataType::FP32: return *static_cast<const float*>(p);
    case DataType::FP64: return *static_cast<const double*>(p);
    case DataType::FP16: return float16::to_float(*static_cast<const uint16_t*>(p));
    case DataType::BF16: return bfloat16::to_float(*static_cast<const uint16_t*>(p));
    case DataType::INT32: return *static_cast<const int32_t*>(p);
    case DataType::INT64: return static_cast<double>(*static_cast<const int64_t*>(p));
    case DataType::BOOL: return *static_cast<const bool*>(p) ? 1.0 : 0.0;
    default:
      throw Error("cannot read a scalar of dtype " + std::string(to_string(t.dtype())));
  }
}

}  // namespace ctp
