// A deterministic synthetic classification data set: Gaussian clusters, one
// per class, and the per-step batches of data-parallel training sharded
// across workers.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "executor/runtime/tensor.h"

namespace ctp::samples {

struct ClusterData {
  int64_t dim = 0, classes = 0;
  std::vector<double> features;  // samples x dim, row-major
  std::vector<int64_t> labels;   // class of each sample: sample i has class i % classes
  int64_t size() const { return static_cast<int64_t>(labels.size()); }
};

// `samples` points around `classes` centres drawn from N(0, separation^2)
// per coordinate, each point the centre plus N(0, spread^2) noise. The same
// arguments give the same data on every machine.
ClusterData make_clusters(int64_t samples, int64_t dim, int64_t classes, uint64_t seed,
                          double separation = 3.0, double spread = 1.0);

struct Batch {
  Tensor features;  // [rows, dim], `dtype`
  Tensor labels;    // [rows, 1], INT64
  // BatchSource's staging buffers for batches that wrap around the data
  // set, kept between steps for reuse.
  Tensor wrapped_features, wrapped_labels;
};

// Step `step`'s global batch is `global_batch` consecutive samples (wrapping
// around the data set); worker `rank` of `world` takes the rank-th equal
// contiguous share of it. global_batch must be a multiple of world.
Batch shard_batch(const ClusterData& data, int64_t step, int64_t global_batch, int rank,
                  int world, DataType dtype);
// Rows [begin, end) of the data set (for evaluation).
Batch rows(const ClusterData& data, int64_t begin, int64_t end, DataType dtype);

// The data set converted to `dtype` once, for a training loop: a batch of
// consecutive rows is a view into it (no copy; on a GPU the upload reads the
// data set directly, at full speed when `allocate` gave page-locked memory);
// a batch that wraps around the end is copied into a staging buffer reused
// from step to step. shard_batch instead converts every element and
// allocates fresh tensors on each call, host time a GPU step would wait for.
class BatchSource {
 public:
  // `allocate` makes the data set's host tensors (default: plain CPU
  // tensors); pass DeviceRuntime::host_tensor to upload from page-locked memory.
  using HostAllocator = std::function<Tensor(DataType, std::vector<int64_t>)>;
  BatchSource(const ClusterData& data, DataType dtype, HostAllocator allocate = {});
  // The rows of shard_batch(data, step, global_batch, rank, world, dtype),
  // in `into`: views of the data set, or `into`'s own staging buffers when
  // the rows wrap around (Batch::wrapped_*, reallocated only when shape or
  // dtype differ).
  // Views stay valid while this BatchSource lives; nothing may write them.
  void shard(int64_t step, int64_t global_batch, int rank, int world, Batch& into) const;

 private:
  HostAllocator allocate_;
  Tensor features_;  // [samples, dim]
  Tensor labels_;    // [samples, 1], INT64
  int64_t dim_;
};

}  // namespace ctp::samples
