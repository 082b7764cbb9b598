// Conversions between float and the 16-bit float formats tensors store as
// raw uint16_t: IEEE binary16 (FP16) and bfloat16 (BF16).
#pragma once
#include <cstdint>

namespace ctp {

uint16_t float_to_half(float value);  // round to nearest even; overflow gives inf
float half_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);  // round to nearest even
float bfloat16_to_float(uint16_t bits);

}  // namespace ctp
