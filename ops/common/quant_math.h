// The element formulas of Paddle's simulated ("fake") quantization ops,
// written once for the CPU kernels (ops/cpu/quant_kernels.cc) and the CUDA
// kernels (ops/cuda/quant_kernels.cu, compiled by nvcc as C++17, hence plain
// functions of plain types). T is float or double. The facts are Paddle's
// fake_quantize_op.h: a value x with scale s and bin_cnt = 2^(bits-1) - 1
// levels on each side becomes
//   round_type 0 (Paddle's default): clamp(round_half_even(x * bin_cnt / s),
//                                    -bin_cnt - 1, bin_cnt)
//   round_type 1:                    round_half_away(clip(x, -s, s) * bin_cnt / s)
// and the quantize-dequantize form maps that level back: level * s / bin_cnt.
#pragma once
#include <math.h>

#include "ops/common/host_device.h"

namespace ctp::quant {

CTP_HOST_DEVICE inline float floor_of(float v) { return floorf(v); }
CTP_HOST_DEVICE inline double floor_of(double v) { return floor(v); }
CTP_HOST_DEVICE inline float round_away_of(float v) { return roundf(v); }
CTP_HOST_DEVICE inline double round_away_of(double v) { return round(v); }

// 1 / s, with Paddle's guard: a scale at or below 1e-30 (zero, negative)
// becomes s + 1e-6 first, so a zero scale gives a large finite factor.
template <typename T>
CTP_HOST_DEVICE inline T inverse_scale(T s) {
  return s <= static_cast<T>(1e-30) ? static_cast<T>(1) / (s + static_cast<T>(1e-6))
                                    : static_cast<T>(1) / s;
}

// Nearest integer, halves to the even neighbour (2.5 -> 2, 3.5 -> 4, -2.5 -> -2).
template <typename T>
CTP_HOST_DEVICE inline T round_half_even(T x) {
  const T lower = floor_of(x);
  const T below = x - lower, above = (lower + 1) - x;
  if (below < above) return lower;
  if (above < below) return lower + 1;
  const T half = lower / 2;
  return floor_of(half) == half ? lower : lower + 1;
}

// The quantized level of x (a whole number, kept in T as Paddle keeps it).
template <typename T>
CTP_HOST_DEVICE inline T quantize(T x, T scale, T bin_cnt, int round_type) {
  const T inv = inverse_scale(scale);
  if (round_type == 0) {
    T level = round_half_even(bin_cnt * inv * x);
    if (level > bin_cnt) level = bin_cnt;
    if (level < -bin_cnt - 1) level = -bin_cnt - 1;
    return level;
  }
  const T clipped = x > scale ? scale : (x < -scale ? -scale : x);
  return round_away_of(bin_cnt * inv * clipped);
}

template <typename T>
CTP_HOST_DEVICE inline T quantize_dequantize(T x, T scale, T bin_cnt, int round_type) {
  return quantize(x, scale, bin_cnt, round_type) * scale / bin_cnt;
}

// fake_dequantize_max_abs: x * scale / max_range.
template <typename T>
CTP_HOST_DEVICE inline T dequantize(T x, T scale, T max_range) {
  return x * scale / max_range;
}

}  // namespace ctp::quant
