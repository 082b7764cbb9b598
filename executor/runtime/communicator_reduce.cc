#include "executor/runtime/communicator_reduce.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "executor/runtime/float16.h"
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
    case DataType::FP16:
      return reduce_16bit<float16::to_float, float16::from_float>(op, out, a, b, n);
    case DataType::BF16:
      return reduce_16bit<bfloat16::to_float, bfloat16::from_float>(op, out, a, b, n);
    default:
      throw Error("all-reduce of " + std::string(to_string(dtype)) + " is not supported");
  }
}

}  // namespace ctp
