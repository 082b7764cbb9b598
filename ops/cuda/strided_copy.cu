// The strided copy of transpose2, slice and stack (and their gradients) on
// the GPU: one thread per element, moving the element's bytes unchanged.
#include <cstdint>

#include "ops/cuda/device_math.cuh"
#include "ops/cuda/shape_device_kernels.h"

namespace ctp::cuda::launch {
namespace {

using namespace detail;  // ops/cuda/device_math.cuh

template <typename Element>
__global__ void strided_copy_kernel(const Element* src, Element* dst, StridedIndex index,
                                    int64_t total) {
  for (int64_t n = first_index(); n < total; n += grid_stride()) {
    int64_t rest = n, s = index.src_offset, t = index.dst_offset;
    for (int d = index.rank - 1; d >= 0; --d) {
      const int64_t i = rest % index.shape[d];
      rest /= index.shape[d];
      s += i * index.src_strides[d];
      t += i * index.dst_strides[d];
    }
    dst[t] = src[s];
  }
}

template <typename Element>
void launch_copy(const void* src, void* dst, const StridedIndex& index, int64_t total, Stream s) {
  strided_copy_kernel<Element><<<grid_for(total), kThreads, 0, s>>>(
      static_cast<const Element*>(src), static_cast<Element*>(dst), index, total);
}

}  // namespace

void strided_copy(const void* src, void* dst, int element_size, const StridedIndex& index,
                  Stream s) {
  int64_t total = 1;
  for (int d = 0; d < index.rank; ++d) total *= index.shape[d];
  if (total == 0) return;
  switch (element_size) {
    case 1: return launch_copy<uint8_t>(src, dst, index, total, s);
    case 2: return launch_copy<uint16_t>(src, dst, index, total, s);
    case 4: return launch_copy<uint32_t>(src, dst, index, total, s);
    default: return launch_copy<uint64_t>(src, dst, index, total, s);
  }
}

}  // namespace ctp::cuda::launch
