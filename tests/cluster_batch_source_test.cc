// BatchSource (the sample trainer's per-step batches, copied out of a data
// set converted once) gives exactly shard_batch's rows, also across the
// wrap-around of the data set, and reuses the caller's buffers.
#include <gtest/gtest.h>

#include <cstring>

#include "samples/cluster_data.h"

namespace ctp::samples {
namespace {

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

TEST(BatchSource, GivesShardBatchsRowsAndReusesTheBuffers) {
  const ClusterData data = make_clusters(37, 5, 3, 11);
  for (DataType dtype : {DataType::FP32, DataType::FP64}) {
    const BatchSource source(data, dtype);
    Batch reused;
    const void* buffer = nullptr;
    for (int64_t step = 0; step < 9; ++step)  // 12 rows a step: wraps around 37 samples
      for (int rank = 0; rank < 3; ++rank) {
        source.shard(step, 12, rank, 3, reused);
        const Batch want = shard_batch(data, step, 12, rank, 3, dtype);
        EXPECT_TRUE(same_bytes(reused.features, want.features)) << "step " << step << " rank " << rank;
        EXPECT_TRUE(same_bytes(reused.labels, want.labels)) << "step " << step << " rank " << rank;
        if (buffer) {
          EXPECT_EQ(reused.features.raw_data(), buffer) << "no new allocation per step";
        }
        buffer = reused.features.raw_data();
      }
  }
  Batch b;
  EXPECT_THROW(BatchSource(data, DataType::FP32).shard(0, 10, 0, 3, b), Error);
}

}  // namespace
}  // namespace ctp::samples
