// The device launchers of the simulated-quantization ops
// (ops/cuda/quant_kernels.cu), under the rules of ops/schema/meta_quant.h
// and the formulas of ops/common/quant_math.h. Each queues on `s` and
// returns. T: float or double. Scales are read on the device (one element),
// so no launch waits for the host.
#pragma once
#include <cstdint>

#include "ops/cuda/device_kernels.h"

namespace ctp::cuda::launch {

// out[i] = quantize(x[i]) (or quantize_dequantize when `dequantize`) with
// the scale in_scale[0]; out_scale, when not null, gets in_scale[0] too.
template <typename T>
void fake_quantize(const T* x, const T* in_scale, T* out, T* out_scale, int64_t n,
                   int64_t bin_cnt, int round_type, bool dequantize, Stream s);

// out[i] = x[i] * scale[0] / max_range.
template <typename T>
void fake_dequantize(const T* x, const T* scale, T* out, int64_t n, double max_range, Stream s);

}  // namespace ctp::cuda::launch
