#include "ops/cpu/cpu_kernel_util.h"

#include <cmath>
#include <cstring>

namespace ctp::cpu {

namespace {

template <typename T>
void fill_as(Tensor& t, T value) {
  T* p = static_cast<T*>(t.raw_data());
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) p[i] = value;
}

}  // namespace

void fill(Tensor& t, double value) {
  switch (t.dtype()) {
    case DataType::FP32: fill_as<float>(t, static_cast<float>(value)); return;
    case DataType::FP64: fill_as<double>(t, value); return;
    case DataType::FP16: fill_as<uint16_t>(t, float16::from_float(static_cast<float>(value))); return;
    case DataType::BF16:
      fill_as<uint16_t>(t, bfloat16::from_float(static_cast<float>(value)));
      return;
    case DataType::INT32: fill_as<int32_t>(t, static_cast<int32_t>(value)); return;
    case DataType::INT64: fill_as<int64_t>(t, static_cast<int64_t>(value)); return;
    case DataType::INT16: fill_as<int16_t>(t, static_cast<int16_t>(value)); return;
    case DataType::INT8: fill_as<int8_t>(t, static_cast<int8_t>(value)); return;
    case DataType::UINT8: fill_as<uint8_t>(t, static_cast<uint8_t>(value)); return;
    case DataType::BOOL: fill_as<bool>(t, value != 0.0); return;
    default:
      throw Error("cannot fill a tensor of dtype " + std::string(to_string(t.dtype())));
  }
}

void copy_tensor(const Tensor& src, Tensor& dst) {
  if (&src == &dst) return;
  if (src.shares_buffer_with(dst) && src.offset() == dst.offset() &&
      src.dtype() == dst.dtype() && src.shape() == dst.shape())
    return;
  dst.resize(src.dtype(), src.shape());
  if (src.bytes() == 0) return;
  std::memmove(dst.raw_data(), src.raw_data(), src.bytes());
}

}  // namespace ctp::cpu
