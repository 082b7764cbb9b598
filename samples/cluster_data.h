// A deterministic synthetic classification data set: Gaussian clusters, one
// per class, and the per-step batches of data-parallel training sharded
// across workers.
#pragma once
#include <cstdint>
#include <vector>

#include "executor/tensor.h"

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
};

// Step `step`'s global batch is `global_batch` consecutive samples (wrapping
// around the data set); worker `rank` of `world` takes the rank-th equal
// contiguous share of it. global_batch must be a multiple of world.
Batch shard_batch(const ClusterData& data, int64_t step, int64_t global_batch, int rank,
                  int world, DataType dtype);
// Rows [begin, end) of the data set (for evaluation).
Batch rows(const ClusterData& data, int64_t begin, int64_t end, DataType dtype);

// The data set converted to `dtype` once, so that a training loop copies its
// batches out row by row into buffers it reuses: shard_batch converts every
// element and allocates fresh tensors on each call, host time that a GPU step
// would otherwise wait for.
class BatchSource {
 public:
  BatchSource(const ClusterData& data, DataType dtype);
  // The rows of shard_batch(data, step, global_batch, rank, world, dtype),
  // written into `into` (reallocated only when its shape or dtype differ).
  void shard(int64_t step, int64_t global_batch, int rank, int world, Batch& into) const;

 private:
  Tensor features_;  // [samples, dim]
  std::vector<int64_t> labels_;
  int64_t dim_;
};

}  // namespace ctp::samples
