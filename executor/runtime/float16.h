// Conversions between float and the 16-bit float formats tensors store as
// raw uint16_t: IEEE binary16 (FP16) and bfloat16 (BF16).
#pragma once
#include <cstdint>

namespace ctp::float16 {
uint16_t from_float(float value);  // round to nearest even; overflow gives inf
float to_float(uint16_t bits);
}  // namespace ctp::float16

namespace ctp::bfloat16 {
uint16_t from_float(float value);  // round to nearest even
float to_float(uint16_t bits);
}  // namespace ctp::bfloat16
