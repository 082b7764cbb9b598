// dropout's mask and scales, written once for the CPU kernels
// (ops/cpu/dropout_kernels.cc) and the CUDA kernels
// (ops/cuda/activation_kernels.cu, nvcc's C++17): a seed gives the same mask
// on every device.
#pragma once
#include <cstdint>

#include "ops/common/host_device.h"

namespace ctp::dropout {

// A counter-based generator: element i's draw is a hash of (seed, i)
// (splitmix64's stream from the mixed seed), so every device, thread layout
// and order gives the same mask for the same seed.
CTP_HOST_DEVICE inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// Element i's draw in [0, 1): 24 random bits, exact in a float.
CTP_HOST_DEVICE inline float uniform(uint64_t seed, int64_t i) {
  const uint64_t z = mix(mix(seed) + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull);
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}
// Paddle keeps an element when its draw is not below dropout_prob.
CTP_HOST_DEVICE inline bool keep(uint64_t seed, int64_t i, float prob) {
  return uniform(seed, i) >= prob;
}

// What dropout (training) multiplies a kept element by, and its gradient:
// 1 (downgrade_in_infer), or 1 / (1 - p) (upscale_in_train; 0 when p is 1,
// where everything is dropped). Inference scales by `test_scale`: 1 - p
// (downgrade_in_infer) or 1.
struct Scales {
  float keep_scale_denominator;  // 1, or 1 - p (divided by, as Paddle)
  bool drop_all;                 // p == 1 in upscale_in_train
  float test_scale;
};
CTP_HOST_DEVICE inline Scales scales(float prob, bool upscale_in_train) {
  Scales s;
  s.keep_scale_denominator = upscale_in_train ? 1.0f - prob : 1.0f;
  s.drop_all = upscale_in_train && prob >= 1.0f;
  s.test_scale = upscale_in_train ? 1.0f : 1.0f - prob;
  return s;
}
// A training element: x kept (divided by the denominator) or 0.
template <typename T>
CTP_HOST_DEVICE inline T train_value(T x, bool kept, const Scales& s) {
  if (!kept || s.drop_all) return T(0);
  return s.keep_scale_denominator == 1.0f ? x : x / T(s.keep_scale_denominator);
}

}  // namespace ctp::dropout
