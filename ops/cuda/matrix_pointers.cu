// The addresses of a batch's matrices for cublasGemmBatchedEx
// (matrix_pointers.h), made on the GPU in the stream's order, so that no
// host-to-device copy waits between the launches.
#include "ops/cuda/device_math.cuh"
#include "ops/cuda/matrix_pointers.h"

namespace ctp::cuda::launch {
namespace {

struct Grids {
  MatrixGrid g[3];
};

__global__ void matrix_pointers_kernel(Grids grids, int64_t count, int64_t inner,
                                       const void** out) {
  for (int64_t at = detail::first_index(); at < 3 * count; at += detail::grid_stride()) {
    const MatrixGrid& g = grids.g[at / count];
    const int64_t i = at % count;
    out[at] = g.base + (i / inner) * g.outer_bytes + (i % inner) * g.inner_bytes;
  }
}

}  // namespace

void matrix_pointers(const MatrixGrid (&grids)[3], int64_t count, int64_t inner, const void** out,
                     Stream s) {
  if (count <= 0) return;
  const Grids all{{grids[0], grids[1], grids[2]}};
  matrix_pointers_kernel<<<detail::grid_for(3 * count), detail::kThreads, 0, s>>>(all, count,
                                                                                  inner, out);
}

}  // namespace ctp::cuda::launch
