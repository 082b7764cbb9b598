// check_finite_and_unscale's and update_loss_scaling's device code
// (ops/cuda/amp_device_kernels.h).
#include "ops/cuda/amp_device_kernels.h"
#include "ops/cuda/device_math.cuh"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh

__global__ void clear_flag_kernel(bool* found) { *found = false; }

template <typename T>
__global__ void unscale_and_check_kernel(const T* x, T* out, int64_t n, Scalar scale,
                                         bool* found) {
  const T inverse = div_rn(T(1), static_cast<T>(load(scale)));
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const T v = x[i];
    if (!isfinite(v)) *found = true;  // every writer writes true: no race on the value
    out[i] = mul_rn(v, inverse);
  }
}

template <typename T>
__global__ void zero_if_found_kernel(const T* x, T* out, int64_t n, const bool* found) {
  const bool zero = *found;
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = zero ? T(0) : x[i];
}

template <typename T>
__global__ void update_state_kernel(const bool* found, const T* prev_scale,
                                    const int32_t* good_in, const int32_t* bad_in,
                                    LossScalingRule rule, bool stop, T* scale_out,
                                    int32_t* good_out, int32_t* bad_out) {
  LossScalingState state{static_cast<double>(*prev_scale), *good_in, *bad_in};
  if (!stop) state = next_loss_scaling<T>(rule, *found, state);
  *scale_out = static_cast<T>(state.scale);
  *good_out = state.good_steps;
  *bad_out = state.bad_steps;
}

}  // namespace

void clear_flag(bool* found, Stream s) { clear_flag_kernel<<<1, 1, 0, s>>>(found); }

template <typename T>
void unscale_and_check(const T* x, T* out, int64_t n, Scalar scale, bool* found, Stream s) {
  if (n > 0) unscale_and_check_kernel<T><<<grid_for(n), kThreads, 0, s>>>(x, out, n, scale, found);
}

template <typename T>
void zero_if_found(const T* x, T* out, int64_t n, const bool* found, Stream s) {
  if (n > 0) zero_if_found_kernel<T><<<grid_for(n), kThreads, 0, s>>>(x, out, n, found);
}

template <typename T>
void update_loss_scaling_state(const bool* found, const T* prev_scale, const int32_t* good_in,
                               const int32_t* bad_in, LossScalingRule rule, bool stop,
                               T* scale_out, int32_t* good_out, int32_t* bad_out, Stream s) {
  update_state_kernel<T><<<1, 1, 0, s>>>(found, prev_scale, good_in, bad_in, rule, stop,
                                         scale_out, good_out, bad_out);
}

template void unscale_and_check<float>(const float*, float*, int64_t, Scalar, bool*, Stream);
template void unscale_and_check<double>(const double*, double*, int64_t, Scalar, bool*, Stream);
template void zero_if_found<float>(const float*, float*, int64_t, const bool*, Stream);
template void zero_if_found<double>(const double*, double*, int64_t, const bool*, Stream);
template void update_loss_scaling_state<float>(const bool*, const float*, const int32_t*,
                                               const int32_t*, LossScalingRule, bool, float*,
                                               int32_t*, int32_t*, Stream);
template void update_loss_scaling_state<double>(const bool*, const double*, const int32_t*,
                                                const int32_t*, LossScalingRule, bool, double*,
                                                int32_t*, int32_t*, Stream);

}  // namespace ctp::cuda::launch
