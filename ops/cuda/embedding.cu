// lookup_table_v2 and its gradient on the GPU: one thread per element of
// Out. The gradient adds with atomicAdd, so the order of additions into a
// row that several ids pick varies (FP32 sums differ from the CPU's in the
// last bits).
#include "ops/cuda/device_math.cuh"
#include "ops/cuda/shape_device_kernels.h"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh

__device__ inline int64_t id_at(const void* ids, bool ids64, int64_t i) {
  return ids64 ? static_cast<const int64_t*>(ids)[i]
               : static_cast<int64_t>(static_cast<const int32_t*>(ids)[i]);
}

template <typename Element>
__global__ void lookup_kernel(const Element* w, const void* ids, bool ids64, int64_t padding_idx,
                              Element* out, int64_t count, int64_t rows, int64_t width) {
  const int64_t n = count * width;
  for (int64_t at = first_index(); at < n; at += grid_stride()) {
    const int64_t id = id_at(ids, ids64, at / width);
    const bool zero = (padding_idx != -1 && id == padding_idx) || id < 0 || id >= rows;
    out[at] = zero ? Element(0) : w[id * width + at % width];
  }
}

template <typename T>
__global__ void lookup_grad_kernel(const T* dout, const void* ids, bool ids64,
                                   int64_t padding_idx, T* dw, int64_t count, int64_t rows,
                                   int64_t width) {
  const int64_t n = count * width;
  for (int64_t at = first_index(); at < n; at += grid_stride()) {
    const int64_t id = id_at(ids, ids64, at / width);
    if ((padding_idx != -1 && id == padding_idx) || id < 0 || id >= rows) continue;
    atomicAdd(dw + id * width + at % width, dout[at]);
  }
}

template <typename Element>
void launch_lookup(const void* w, const void* ids, bool ids64, int64_t padding_idx, void* out,
                   int64_t count, int64_t rows, int64_t width, Stream s) {
  lookup_kernel<Element><<<grid_for(count * width), kThreads, 0, s>>>(
      static_cast<const Element*>(w), ids, ids64, padding_idx, static_cast<Element*>(out), count,
      rows, width);
}

}  // namespace

void lookup_rows(const void* w, const void* ids, bool ids64, int64_t padding_idx, void* out,
                 int64_t count, int64_t rows, int64_t width, int element_size, Stream s) {
  if (count * width == 0) return;
  switch (element_size) {
    case 1: return launch_lookup<uint8_t>(w, ids, ids64, padding_idx, out, count, rows, width, s);
    case 2: return launch_lookup<uint16_t>(w, ids, ids64, padding_idx, out, count, rows, width, s);
    case 4: return launch_lookup<uint32_t>(w, ids, ids64, padding_idx, out, count, rows, width, s);
    default: return launch_lookup<uint64_t>(w, ids, ids64, padding_idx, out, count, rows, width, s);
  }
}

template <typename T>
void lookup_rows_grad(const T* dout, const void* ids, bool ids64, int64_t padding_idx, T* dw,
                      int64_t count, int64_t rows, int64_t width, Stream s) {
  if (count * width == 0) return;
  lookup_grad_kernel<T><<<grid_for(count * width), kThreads, 0, s>>>(dout, ids, ids64,
                                                                     padding_idx, dw, count,
                                                                     rows, width);
}

template void lookup_rows_grad<float>(const float*, const void*, bool, int64_t, float*, int64_t,
                                      int64_t, int64_t, Stream);
template void lookup_rows_grad<double>(const double*, const void*, bool, int64_t, double*,
                                       int64_t, int64_t, int64_t, Stream);

}  // namespace ctp::cuda::launch
