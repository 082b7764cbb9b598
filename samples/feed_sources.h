// What the sample trainer feeds each worker at each step, per model: the
// MLP's Gaussian clusters (cluster_data.h), and synthetic, learnable data for
// the real models. Every source is deterministic per (step, row of the
// global batch): worker w of W gets rows [w*b, (w+1)*b) of the global batch
// of b*W rows, exactly the rows one worker on the whole batch sees, which is
// what comparing data-parallel training with one worker needs.
//   ResNet: an image of class c is class c's fixed random template plus
//     Gaussian noise (std 0.5); the label is c.
//   BERT: random token ids; each token's label is its id modulo the classes,
//     learnable through the token embedding; position ids 0..seq-1; segment
//     ids 0 for the first half of the sequence, 1 for the second.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "executor/runtime/tensor.h"
#include "samples/cluster_data.h"
#include "samples/real_models.h"

namespace ctp::samples {

// One worker's feeds for one step, reused from step to step.
struct FeedBatch {
  std::vector<Tensor> tensors;  // in TrainingPrograms::inputs order, the label last
  Batch clusters;               // the MLP's staging (cluster_data.h)
};

class FeedSource {
 public:
  // Makes the host tensors of the feeds (default: plain CPU tensors); pass
  // DeviceRuntime::host_tensor to upload from page-locked memory.
  using HostAllocator = std::function<Tensor(DataType, std::vector<int64_t>)>;
  virtual ~FeedSource() = default;
  // Worker `worker` of `workers`'s share of step `step`'s global batch.
  // global_batch must be a multiple of workers.
  virtual void shard(int64_t step, int64_t global_batch, int worker, int workers,
                     FeedBatch& into) const = 0;
};

// The MLP's: BatchSource's rows of the clusters (features in `dtype`).
std::unique_ptr<FeedSource> cluster_feeds(const ClusterData& data, DataType dtype,
                                          FeedSource::HostAllocator allocate);
// ResNet's images [rows, channels, size, size] FP32 and labels [rows, 1].
std::unique_ptr<FeedSource> image_feeds(const ResNetConfig& model, uint64_t seed,
                                        FeedSource::HostAllocator allocate);
// BERT's src_ids, pos_ids, sent_ids [rows, seq] and labels [rows, seq, 1].
std::unique_ptr<FeedSource> token_feeds(const BertConfig& model, uint64_t seed,
                                        FeedSource::HostAllocator allocate);

}  // namespace ctp::samples
