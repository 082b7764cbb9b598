// Copies between strided layouts, which the CPU and CUDA kernels of
// transpose2, slice and stack (and their gradients) all are: element
// (i_0, ..., i_n) of `shape` is read at src_offset + sum(i_d * src_strides[d])
// and written at dst_offset + sum(i_d * dst_strides[d]), in elements. The
// plans come from the ops' rules (ops/schema/meta_shape.h); a gradient's
// plan is its forward plan reversed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "executor/runtime/kernel.h"
#include "ops/schema/meta_shape.h"

namespace ctp {

struct StridedCopy {
  std::vector<int64_t> shape;
  std::vector<int64_t> src_strides, dst_strides;
  int64_t src_offset = 0, dst_offset = 0;
};

// Row-major element strides of `shape`.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);
// The same copy the other way (a gradient's).
StridedCopy reversed(StridedCopy copy);

// transpose2: X into Out.
StridedCopy transpose_copy(const meta::TransposeMeta& m);
// slice: Input's slice into Out.
StridedCopy slice_copy(const meta::SliceMeta& m);
// stack: input `i` into its place in Y.
StridedCopy stack_copy(const meta::StackMeta& m, std::size_t i);

// The element size of `dtype` (1, 2, 4 or 8 bytes), which the copies move
// whatever the elements hold; fails, naming the op, for a dtype without
// fixed-size elements (strings).
std::size_t movable_element_size(const KernelContext& ctx, DataType dtype);

// The copy on host memory, for elements of `element_size` bytes (1, 2, 4
// or 8).
void copy_strided_on_host(const StridedCopy& copy, const void* src, void* dst,
                          std::size_t element_size);

}  // namespace ctp
