// The device launchers of check_finite_and_unscale and update_loss_scaling
// (ops/cuda/amp_kernels.cu), under the rules of ops/schema/meta_amp.h. Each
// queues on `s` and returns: the flag and the loss-scaling state stay on the
// GPU (no copy to the host per step). T: float or double.
#pragma once
#include <cstdint>

#include "ops/common/loss_scaling_rule.h"
#include "ops/cuda/device_kernels.h"

namespace ctp::cuda::launch {

// *found = false.
void clear_flag(bool* found, Stream s);
// out[i] = x[i] * (1 / scale) (the reciprocal rounded to T, as on the CPU);
// *found = true where an x[i] is Inf or NaN (never set back to false).
template <typename T>
void unscale_and_check(const T* x, T* out, int64_t n, Scalar scale, bool* found, Stream s);
// out[i] = *found ? 0 : x[i].
template <typename T>
void zero_if_found(const T* x, T* out, int64_t n, const bool* found, Stream s);
// One thread moves the state by next_loss_scaling<T> (unless `stop`);
// the outputs may be the inputs.
template <typename T>
void update_loss_scaling_state(const bool* found, const T* prev_scale, const int32_t* good_in,
                               const int32_t* bad_in, LossScalingRule rule, bool stop,
                               T* scale_out, int32_t* good_out, int32_t* bad_out, Stream s);

}  // namespace ctp::cuda::launch
