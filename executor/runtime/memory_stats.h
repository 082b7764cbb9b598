// Bytes of tensor buffers held, per device kind (all devices of that kind
// together): now, the most at any moment since the last reset, and how many
// buffers were made. As torch.cuda.memory_allocated / max_memory_allocated:
// the bytes tensors asked for, not what the driver or a pool reserved.
// Buffers count themselves: each allocator notes a buffer when it is made and
// when it is freed. Process-wide, like the allocators; thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>

#include "executor/runtime/tensor.h"

namespace ctp {

struct MemoryStats {
  int64_t current_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t buffers_made = 0;
};

MemoryStats memory_stats(DeviceKind kind);
// Starts a new peak from what is held now.
void reset_peak_memory(DeviceKind kind);

// For allocators: a buffer of `bytes` was made / freed on a device of `kind`.
void note_buffer_made(DeviceKind kind, std::size_t bytes);
void note_buffer_freed(DeviceKind kind, std::size_t bytes);

}  // namespace ctp
