// The element formulas of the activation ops (tanh, sigmoid, sqrt, square,
// gelu in its erf and tanh forms) and clip, written once for the CPU kernels
// (ops/cpu/activation_math_kernels.cc) and the CUDA kernels (ops/cuda/activation_kernels.cu,
// compiled by nvcc as C++17, hence plain functions of plain types here). T is float or double;
// 16-bit elements are computed in float by both devices.
#pragma once
#include <math.h>

#include "ops/common/host_device.h"

namespace ctp::activation {

enum class Kind : int { Tanh, Sigmoid, Sqrt, Square, GeluErf, GeluTanh };

// Whether Paddle's grad op of `kind` reads the forward output Out (tanh_grad,
// sigmoid_grad, sqrt_grad) rather than X (square_grad, gelu_grad).
constexpr bool grad_reads_out(Kind kind) {
  return kind == Kind::Tanh || kind == Kind::Sigmoid || kind == Kind::Sqrt;
}

// The C library's float and double functions, which host and device both have.
CTP_HOST_DEVICE inline float tanh_of(float v) { return tanhf(v); }
CTP_HOST_DEVICE inline double tanh_of(double v) { return tanh(v); }
CTP_HOST_DEVICE inline float exp_of(float v) { return expf(v); }
CTP_HOST_DEVICE inline double exp_of(double v) { return exp(v); }
CTP_HOST_DEVICE inline float erf_of(float v) { return erff(v); }
CTP_HOST_DEVICE inline double erf_of(double v) { return erf(v); }
CTP_HOST_DEVICE inline float sqrt_of(float v) { return sqrtf(v); }
CTP_HOST_DEVICE inline double sqrt_of(double v) { return sqrt(v); }

// gelu's constants: 1/sqrt(2), 1/sqrt(2 pi), sqrt(2/pi), and the cubic
// coefficient of its tanh form.
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluCubic = 0.044715;

template <typename T>
CTP_HOST_DEVICE inline T forward(Kind kind, T x) {
  switch (kind) {
    case Kind::Tanh:
      return tanh_of(x);
    case Kind::Sigmoid:
      return T(1) / (T(1) + exp_of(-x));
    case Kind::Sqrt:
      return sqrt_of(x);
    case Kind::Square:
      return x * x;
    case Kind::GeluErf:
      return x * T(0.5) * (T(1) + erf_of(x * T(kSqrtHalf)));
    case Kind::GeluTanh: {
      const T inner = T(kSqrt2OverPi) * (x + T(kGeluCubic) * x * x * x);
      return T(0.5) * x * (T(1) + tanh_of(inner));
    }
  }
  return x;
}

// X's gradient from Out's: `in` is what the grad op reads (Out where
// grad_reads_out, else X).
template <typename T>
CTP_HOST_DEVICE inline T backward(Kind kind, T in, T dout) {
  switch (kind) {
    case Kind::Tanh:
      return dout * (T(1) - in * in);
    case Kind::Sigmoid:
      return dout * in * (T(1) - in);
    case Kind::Sqrt:
      return dout * T(0.5) / in;
    case Kind::Square:
      return dout * T(2) * in;
    case Kind::GeluErf: {
      const T cdf = T(0.5) * (T(1) + erf_of(in * T(kSqrtHalf)));
      const T pdf = T(kInvSqrt2Pi) * exp_of(T(-0.5) * in * in);
      return dout * (cdf + in * pdf);
    }
    case Kind::GeluTanh: {
      const T square = in * in;
      const T t = tanh_of(T(kSqrt2OverPi) * (in + T(kGeluCubic) * square * in));
      const T slope = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * square);
      return dout * (T(0.5) * (T(1) + t) + T(0.5) * in * (T(1) - t * t) * slope);
    }
  }
  return dout;
}

// clip: NaN passes through; the gradient flows strictly inside (min, max),
// as Paddle's.
template <typename T>
CTP_HOST_DEVICE inline T clip(T x, T min, T max) {
  return x < min ? min : (x > max ? max : x);
}
template <typename T>
CTP_HOST_DEVICE inline T clip_grad(T x, T min, T max, T dout) {
  return (x > min && x < max) ? dout : T(0);
}

}  // namespace ctp::activation
