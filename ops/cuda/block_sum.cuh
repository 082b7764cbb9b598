// A block-wide sum (nvcc only): each warp adds its threads' values by
// shuffles, then the first warp adds the warps' sums. The order is fixed by
// the block's shape, so a launch gives the same bits every run (FP32 results
// differ from the CPU's sequential sums in the last bits).
#pragma once

namespace ctp::cuda::launch::detail {

// The sum of every thread's v over the block, returned to every thread;
// `shared` holds at least 32 values. blockDim.x is a multiple of 32.
template <typename U>
__device__ U block_sum(U v, U* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? shared[lane] : U(0);
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  const U total = shared[0];
  __syncthreads();
  return total;
}

}  // namespace ctp::cuda::launch::detail
