// The element formulas of the activations that take attributes: relu6,
// hard_sigmoid, hard_swish and swish, written once for the CPU kernels
// (ops/cpu/attr_activation_kernels.cc) and the CUDA kernels
// (ops/cuda/attr_activation_kernels.cu; nvcc compiles it as C++17, hence
// plain functions of plain types). T is float or double; 16-bit elements are
// computed in float by both devices. Paddle's facts: activation_op.cc and
// phi's activation functors.
#pragma once
#include <math.h>

#include "ops/common/host_device.h"

namespace ctp::attr_activation {

enum class Kind : int { Relu6, HardSigmoid, HardSwish, Swish };

// The attributes, by kind (Paddle's defaults in parentheses):
//   relu6:        a = threshold (6)
//   hard_sigmoid: a = slope (0.2), b = offset (0.5)
//   hard_swish:   a = threshold (6), b = scale (6), c = offset (3)
//   swish:        a = beta (1)
struct Coefficients {
  double a = 0, b = 0, c = 0;
};

// Whether Paddle's grad op reads Out (relu6_grad, hard_sigmoid_grad) rather
// than X (hard_swish_grad, swish_grad).
constexpr bool grad_reads_out(Kind kind) { return kind == Kind::Relu6 || kind == Kind::HardSigmoid; }

CTP_HOST_DEVICE inline float exp_of(float v) { return expf(v); }
CTP_HOST_DEVICE inline double exp_of(double v) { return exp(v); }

template <typename T>
CTP_HOST_DEVICE inline T clamp(T v, T lo, T hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

template <typename T>
CTP_HOST_DEVICE inline T forward(Kind kind, T x, const Coefficients& k) {
  switch (kind) {
    case Kind::Relu6:
      return clamp(x, T(0), T(k.a));
    case Kind::HardSigmoid:
      return clamp(T(k.a) * x + T(k.b), T(0), T(1));
    case Kind::HardSwish:
      return x * clamp(x + T(k.c), T(0), T(k.a)) / T(k.b);
    case Kind::Swish:
      return x / (T(1) + exp_of(-T(k.a) * x));
  }
  return x;
}

// X's gradient; `in` is Out where grad_reads_out, else X. At the kinks the
// gradient is Paddle's: relu6 and hard_sigmoid pass it strictly inside their
// ranges; hard_swish's middle piece covers (-offset, threshold - offset).
template <typename T>
CTP_HOST_DEVICE inline T backward(Kind kind, T in, T dout, const Coefficients& k) {
  switch (kind) {
    case Kind::Relu6:
      return (in > T(0) && in < T(k.a)) ? dout : T(0);
    case Kind::HardSigmoid:
      return (in > T(0) && in < T(1)) ? dout * T(k.a) : T(0);
    case Kind::HardSwish: {
      const T shifted = in + T(k.c);
      if (shifted <= T(0)) return T(0);
      if (shifted >= T(k.a)) return dout * T(k.a) / T(k.b);
      return dout * (T(2) * in + T(k.c)) / T(k.b);
    }
    case Kind::Swish: {
      const T s = T(1) / (T(1) + exp_of(-T(k.a) * in));
      return dout * (s + T(k.a) * in * s * (T(1) - s));
    }
  }
  return dout;
}

}  // namespace ctp::attr_activation
