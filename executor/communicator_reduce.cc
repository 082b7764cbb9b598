#include "executor/communicator_reduce.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "program_ir/error.h"

namespace ctp {
namespace {

template <typename T>
T apply(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::Sum: return static_cast<T>(a + b);
    case ReduceOp::Max: return std::max(a, b);
    case ReduceOp::Min: return std::min(a, b);
    case ReduceOp::Prod: return static_cast<T>(a * b);
  }
  return a;
}

template <typename T>
void reduce_typed(ReduceOp op, void* out, const void* a, const void* b, std::size_t n) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  switch (op) {  // one loop per op so that the compiler vectorizes it
    case ReduceOp::Sum:
      for (std::size_t i = 0; i < n; ++i) o[i] = static_cast<T>(x[i] + y[i]);
      break;
    case ReduceOp::Max:
      for (std::size_t i = 0; i < n; ++i) o[i] = std::max(x[i], y[i]);
      break;
    case ReduceOp::Min:
      for (std::size_t i = 0; i < n; ++i) o[i] = std::min(x[i], y[i]);
      break;
    case ReduceOp::Prod:
      for (std::size_t i = 0; i < n; ++i) o[i] = static_cast<T>(x[i] * y[i]);
      break;
  }
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void reduce_16bit(ReduceOp op, void* out, const void* a, const void* b, std::size_t n) {
  uint16_t* o = static_cast<uint16_t*>(out);
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  for (std::size_t i = 0; i < n; ++i) o[i] = FromFloat(apply(op, ToFloat(x[i]), ToFloat(y[i])));
}

}  // namespace

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  return std::bit_cast<float>(bits);
}

uint16_t float_to_half(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  uint32_t abs = x & 0x7fffffff;
  if (abs >= 0x7f800000u)  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to inf
  if (abs < 0x38800000u) {  // subnormal half or zero
    if (abs < 0x33000000u) return sign;
    uint32_t mant = (abs & 0x7fffff) | 0x800000;
    int shift = 126 - static_cast<int>(abs >> 23);  // 14..24
    uint32_t half = mant >> shift;
    uint32_t rest = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t rounded = abs - 0x38000000u;  // rebias the exponent
  uint32_t half = rounded >> 13;
  uint32_t rest = rounded & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;
  return static_cast<uint16_t>(sign | half);
}

float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t float_to_bfloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffff) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // nan
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

bool is_reducible(DataType dtype) {
  switch (dtype) {
    case DataType::FP32: case DataType::FP64: case DataType::INT32: case DataType::INT64:
    case DataType::FP16: case DataType::BF16: case DataType::UINT8: case DataType::INT8:
    case DataType::INT16:
      return true;
    default:
      return false;
  }
}

void reduce_elements(DataType dtype, ReduceOp op, void* out, const void* a, const void* b,
                     std::size_t n) {
  switch (dtype) {
    case DataType::FP32: return reduce_typed<float>(op, out, a, b, n);
    case DataType::FP64: return reduce_typed<double>(op, out, a, b, n);
    case DataType::INT32: return reduce_typed<int32_t>(op, out, a, b, n);
    case DataType::INT64: return reduce_typed<int64_t>(op, out, a, b, n);
    case DataType::INT16: return reduce_typed<int16_t>(op, out, a, b, n);
    case DataType::UINT8: return reduce_typed<uint8_t>(op, out, a, b, n);
    case DataType::INT8: return reduce_typed<int8_t>(op, out, a, b, n);
    case DataType::FP16: return reduce_16bit<half_to_float, float_to_half>(op, out, a, b, n);
    case DataType::BF16:
      return reduce_16bit<bfloat16_to_float, float_to_bfloat16>(op, out, a, b, n);
    default:
      throw Error("all-reduce of " + std::string(to_string(dtype)) + " is not supported");
  }
}

}  // namespace ctp
