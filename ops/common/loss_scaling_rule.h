// Dynamic loss scaling's update (Paddle's update_loss_scaling op), written
// once for the CPU kernel and the CUDA kernel (nvcc), so both keep the same
// state: after `incr_every_n_steps` finite steps in a row the scale grows by
// incr_ratio (kept when the product overflows); after
// `decr_every_n_nan_or_inf` steps with an Inf/NaN gradient (counted since the
// last decrease; a finite step resets the count) it shrinks by decr_ratio,
// never below 1. Each change resets its counter.
#pragma once
#include <cmath>
#include <cstdint>

#include "ops/common/host_device.h"

namespace ctp {

struct LossScalingRule {
  int32_t incr_every_n_steps = 1000;
  int32_t decr_every_n_nan_or_inf = 2;
  float incr_ratio = 2.0f;
  float decr_ratio = 0.8f;
};

struct LossScalingState {
  double scale;  // the loss scaling var's value, FP32 or FP64
  int32_t good_steps, bad_steps;
};

template <typename T>
CTP_HOST_DEVICE inline bool is_finite_value(T v) {
#if defined(__CUDA_ARCH__)
  return isfinite(v);
#else
  return std::isfinite(v);
#endif
}

// `T` is the scale's type: the products are rounded to it, as the kernels store them.
template <typename T>
CTP_HOST_DEVICE inline LossScalingState next_loss_scaling(const LossScalingRule& rule,
                                                          bool found_infinite,
                                                          LossScalingState s) {
  const T scale = static_cast<T>(s.scale);
  if (found_infinite) {
    s.good_steps = 0;
    s.bad_steps += 1;
    if (s.bad_steps >= rule.decr_every_n_nan_or_inf) {
      const T smaller = scale * static_cast<T>(rule.decr_ratio);
      s.scale = smaller < static_cast<T>(1) ? static_cast<T>(1) : smaller;
      s.bad_steps = 0;
    }
  } else {
    s.bad_steps = 0;
    s.good_steps += 1;
    if (s.good_steps >= rule.incr_every_n_steps) {
      const T larger = scale * static_cast<T>(rule.incr_ratio);
      s.scale = is_finite_value(larger) ? larger : scale;
      s.good_steps = 0;
    }
  }
  return s;
}

}  // namespace ctp
