// The launcher that writes the device arrays of matrix addresses a
// pointer-array batched GEMM reads (matrix_pointers.cu), for batches whose
// matrices lie on a two-level grid: matrix i at base + (i / inner) *
// outer_bytes + (i % inner) * inner_bytes. Plain types, as device_kernels.h.
#pragma once
#include <cstdint>

#include "ops/cuda/device_kernels.h"

namespace ctp::cuda::launch {

struct MatrixGrid {
  const char* base = nullptr;
  int64_t outer_bytes = 0;
  int64_t inner_bytes = 0;
};

// out[g * count + i] = grid g's matrix i, for the three grids (A, B, C).
void matrix_pointers(const MatrixGrid (&grids)[3], int64_t count, int64_t inner, const void** out,
                     Stream s);

}  // namespace ctp::cuda::launch
