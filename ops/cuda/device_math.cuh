// Device-side helpers shared by the CUDA kernel files (nvcc only): launch
// geometry, rounding arithmetic without fused multiply-add, and the 16-bit
// element conversions every kernel computes through.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ops/cuda/device_kernels.h"

namespace ctp::cuda::launch {
namespace detail {

constexpr unsigned kThreads = 256;

inline unsigned grid_for(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks < 1) blocks = 1;
  if (blocks > 65535LL * 16) blocks = 65535LL * 16;
  return static_cast<unsigned>(blocks);
}

__device__ inline int64_t first_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ inline float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ inline double div_rn(double a, double b) { return __ddiv_rn(a, b); }

// The type a stored element is computed in: itself, float for 16-bit ones.
template <typename T> struct ComputeOf { using type = T; };
template <> struct ComputeOf<Half> { using type = float; };
template <> struct ComputeOf<BFloat16> { using type = float; };
template <typename T> using Compute = typename ComputeOf<T>::type;

__device__ inline float widen(float v) { return v; }
__device__ inline double widen(double v) { return v; }
__device__ inline float widen(Half v) { return __half2float(__ushort_as_half(v.bits)); }
__device__ inline float widen(BFloat16 v) { return __bfloat162float(__ushort_as_bfloat16(v.bits)); }

// Rounds a computed value to the stored type (nearest even).
template <typename T> __device__ inline T narrow(Compute<T> v) { return static_cast<T>(v); }
template <> __device__ inline Half narrow<Half>(float v) {
  return Half{__half_as_ushort(__float2half_rn(v))};
}
template <> __device__ inline BFloat16 narrow<BFloat16>(float v) {
  return BFloat16{__bfloat16_as_ushort(__float2bfloat16_rn(v))};
}

// A hard label as stored: INT64 (label64) or INT32.
__device__ inline int64_t label_at(const void* label, bool label64, int64_t row) {
  return label64 ? static_cast<const int64_t*>(label)[row]
                 : static_cast<int64_t>(static_cast<const int32_t*>(label)[row]);
}

__device__ inline double load(Scalar s) {
  return s.fp64 ? *static_cast<const double*>(s.data)
                : static_cast<double>(*static_cast<const float*>(s.data));
}

template <typename T>
__device__ inline T apply(Binary op, T a, T b) {
  switch (op) {
    case Binary::Add: return add_rn(a, b);
    case Binary::Sub: return add_rn(a, -b);
    case Binary::Div: return div_rn(a, b);
    default: return mul_rn(a, b);
  }
}

// A gradient's finished sum as stored: times `factor` (reduce_mean's
// 1/count), negated for Sub's Y, rounded once to T.
template <typename T>
__device__ inline T finished_sum(Binary op, bool for_y, Compute<T> acc, Compute<T> factor) {
  if (factor != Compute<T>(1)) acc = mul_rn(acc, factor);
  return narrow<T>((op == Binary::Sub && for_y) ? -acc : acc);
}

// binary() over operands that each repeat with a period over the flat
// output (the period is n: the output's layout; a bias over the last dims:
// its element count), n below 2^31 (32-bit indices, a cheap modulo). 16
// bytes per load and store where the periods and pointers allow whole packs,
// else one element at a time (ops/cuda/packed_kernels.cu).
template <typename T>
void periodic_binary(Binary op, const T* x, const T* y, T* out, int64_t n, int64_t x_period,
                     int64_t y_period, Stream s);

// binary over a full operand (the output's layout) and one broadcast over
// leading and trailing dims, whose own dims sit in the middle, e.g. a
// channel bias [C] added to [N, C, H, W] at axis 1: the broadcast operand's
// element for output o is (o / inner) % mid. n below 2^31. With inner a
// multiple of the pack size, a pack of outputs shares one element of it.
template <typename T>
void middle_broadcast_binary(Binary op, const T* x, const T* y, T* out, int64_t n,
                             int64_t inner, int64_t mid, bool y_is_broadcast, Stream s);

// binary_grad where nothing is summed (the gradient has the output's
// layout): 0 + the contribution (so -0 becomes +0, as on the CPU), times
// factor, negated for Sub's Y; 16-byte packs where aligned.
template <typename T>
void packed_dense_grad(Binary op, bool for_y, const T* dout, const T* other, T* d, int64_t n,
                       double factor, Stream s);

}  // namespace detail
}  // namespace ctp::cuda::launch
