// Many tensors per launch (nvcc only): the tasks of a launch travel by value
// as kernel parameters (no table to upload, nothing kept between steps),
// each task split into chunks of kChunkElements, one block per chunk. The
// multi-tensor element kernels (packed_kernels.cu) and optimizer updates
// (optimizer_kernels.cu) share this layout.
#pragma once
#include <cstddef>
#include <cstdint>

#include "ops/cuda/device_math.cuh"

namespace ctp::cuda::launch::detail {

// Elements per block; a multiple of every pack size, so a chunk's first
// element starts a pack.
constexpr int64_t kChunkElements = 16384;

// Up to kCapacity tasks (each with an element count `n`) and the prefix
// sums of their chunk counts: block b runs chunk b - first_chunk[t] of the
// task t whose chunks hold b. Stays under the 4 KiB of kernel parameters
// that every CUDA version accepts.
template <typename Task, int kCapacity>
struct ChunkTable {
  Task tasks[kCapacity];
  uint32_t first_chunk[kCapacity + 1];  // [count] is the grid
  int count;

  // The task of this block (tasks without elements own no chunk).
  __device__ int task_of_block() const {
    int lo = 0, hi = count;
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      if (first_chunk[mid] <= blockIdx.x) lo = mid;
      else hi = mid;
    }
    return lo;
  }
  // This block's elements [begin, end) of task t.
  __device__ void chunk_of_block(int t, int64_t& begin, int64_t& end) const {
    begin = static_cast<int64_t>(blockIdx.x - first_chunk[t]) * kChunkElements;
    end = tasks[t].n < begin + kChunkElements ? tasks[t].n : begin + kChunkElements;
  }
  uint32_t blocks() const { return first_chunk[count]; }
};

// Calls launch(table) for every kCapacity tasks, in order.
template <int kCapacity, typename Task, typename Launch>
void for_each_chunk_table(const Task* tasks, std::size_t count, Launch&& launch) {
  using Table = ChunkTable<Task, kCapacity>;
  static_assert(sizeof(Table) <= 4000, "kernel parameters over 4 KiB");
  Table table;
  table.count = 0;
  table.first_chunk[0] = 0;
  const auto flush = [&] {
    if (table.count) launch(static_cast<const Table&>(table));
    table.count = 0;
  };
  for (std::size_t k = 0; k < count; ++k) {
    const int64_t n = tasks[k].n > 0 ? tasks[k].n : 0;
    const auto chunks = static_cast<uint32_t>((n + kChunkElements - 1) / kChunkElements);
    // A grid stays far below 2^31 blocks; past 2^30 chunks start a launch.
    if (table.count == kCapacity || table.first_chunk[table.count] + chunks > (1u << 30)) flush();
    table.tasks[table.count] = tasks[k];
    table.first_chunk[table.count + 1] = table.first_chunk[table.count] + chunks;
    ++table.count;
  }
  flush();
}

}  // namespace ctp::cuda::launch::detail
