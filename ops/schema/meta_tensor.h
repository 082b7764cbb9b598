// The rules of the ops that move and reshape tensors (split, concat, cast,
// coalesce_tensor), written once for the schema's inference
// (ops/schema/defs_tensor.cc) and the CPU and CUDA kernels; see meta_math.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/schema/op_context.h"

namespace ctp::meta {

// split: X cut along `axis` (the attribute's, or AxisTensor's value) into the
// pieces of Out: `num` equal ones when num > 0, else the sizes `sections`
// lists (one -1 takes the rest).
struct SplitMeta {
  std::size_t axis;
  std::vector<int64_t> sizes;  // one per var of Out; -1 where unknown
};
SplitMeta split(const OpContext& ctx, TensorMeta x, int64_t axis);

// concat: the inputs of X joined along `axis`; they agree in rank, dtype and
// every other dim.
struct ConcatMeta {
  std::size_t axis;
  Shape out_shape;
};
ConcatMeta concat(const OpContext& ctx, const std::vector<TensorMeta>& xs, int64_t axis);

// cast: X's dtype is in_dtype; Out has out_dtype (either, absent or
// negative, is X's).
struct CastMeta {
  DataType in, out;
};
CastMeta cast(const OpContext& ctx, TensorMeta x);

// coalesce_tensor's chunk alignment where align_size is unset: 256 bytes on
// GPUs (Paddle's allocator granularity) and in the declared FusedOutput; 64
// bytes, a cache line, on CPUs (no false sharing between chunks, aligned
// vector loads; Paddle's 4 KiB would only waste memory between small grads).
inline constexpr std::size_t kGpuChunkAlignment = 256;
inline constexpr std::size_t kCpuChunkAlignment = 64;

// coalesce_tensor: Input's tensors as chunks of one FusedOutput of `dtype`
// (the attribute, else the first input's), each chunk starting on a
// multiple of the alignment (align_size, else `default_alignment`) unless
// use_align is false.
struct CoalesceMeta {
  DataType dtype;
  std::vector<std::size_t> offset_bytes;  // of each chunk from FusedOutput's start
  int64_t fused_numel;                    // -1 when an input's size is unknown
};
CoalesceMeta coalesce_tensor(const OpContext& ctx, const std::vector<TensorMeta>& inputs,
                             std::size_t default_alignment);

}  // namespace ctp::meta
