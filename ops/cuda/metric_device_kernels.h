// The device launchers of top_k and accuracy (ops/cuda/metric_kernels.cu),
// under the rules of ops/schema/meta_metrics.h. Each queues on `s` and
// returns.
#pragma once
#include <cstdint>

#include "ops/cuda/device_kernels.h"

namespace ctp::cuda::launch {

// X viewed as [outer, n, inner]; Out and Indices as [outer, k, inner].
struct TopKGeometry {
  int64_t outer, n, inner, k;
  bool largest;
};
// One thread per row picks its k elements one after another in the order of
// ops/common/top_k_order.h (k passes over the row, no scratch memory), so
// the picks are the CPU kernel's. T: float, double, int32_t, int64_t.
template <typename T>
void top_k(const T* x, T* out, int64_t* indices, const TopKGeometry& g, Stream s);
// dx (X's shape) zeroed, then each picked element takes its Out@GRAD (an
// index outside [0, n) is skipped; the CPU kernel fails on it). T: float,
// double.
template <typename T>
void top_k_grad(const int64_t* indices, const T* dout, T* dx, const TopKGeometry& g, Stream s);

// accuracy over `rows` rows of k indices and one label each (INT64 when
// label64, else INT32): one block counts the rows whose label is among their
// indices and writes accuracy (0 for no rows), correct and total. A negative
// label matches nothing (the CPU kernel fails on it).
void accuracy(const int64_t* indices, const void* label, bool label64, int64_t rows, int64_t k,
              float* accuracy, int32_t* correct, int32_t* total, Stream s);

}  // namespace ctp::cuda::launch
