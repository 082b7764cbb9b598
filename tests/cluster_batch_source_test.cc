// BatchSource (the sample trainer's per-step batches out of a data set
// converted once) gives exactly shard_batch's rows: consecutive rows as views
// of the data set, rows across its wrap-around copied into a staging buffer
// that is reused and never aliases the data set.
#include <gtest/gtest.h>

#include <cstring>

#include "samples/cluster_data.h"

namespace ctp::samples {
namespace {

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

TEST(BatchSource, GivesShardBatchsRowsViewsOrAReusedStagingBuffer) {
  const ClusterData data = make_clusters(37, 5, 3, 11);
  for (DataType dtype : {DataType::FP32, DataType::FP64}) {
    int allocations = 0;
    const BatchSource source(data, dtype, [&](DataType t, std::vector<int64_t> shape) {
      ++allocations;
      return Tensor(t, std::move(shape));
    });
    EXPECT_EQ(allocations, 2) << "the data set's features and labels";
    Batch reused;
    std::shared_ptr<Buffer> data_set, staging;
    int views = 0, copies = 0;
    for (int round = 0; round < 2; ++round)  // the second round reads what the first left
      for (int64_t step = 0; step < 9; ++step)  // 12 rows a step: wraps around 37 samples
        for (int rank = 0; rank < 3; ++rank) {
          source.shard(step, 12, rank, 3, reused);
          const Batch want = shard_batch(data, step, 12, rank, 3, dtype);
          EXPECT_TRUE(same_bytes(reused.features, want.features)) << "step " << step << " rank " << rank;
          EXPECT_TRUE(same_bytes(reused.labels, want.labels)) << "step " << step << " rank " << rank;
          const int64_t first = (step * 12 + rank * 4) % 37;
          if (first + 4 <= 37) {
            ++views;
            if (!data_set) data_set = reused.features.buffer();
            EXPECT_EQ(reused.features.buffer(), data_set) << "consecutive rows: a view, no copy";
          } else {
            ++copies;
            EXPECT_NE(reused.features.buffer(), data_set) << "a wrapped batch is never the data set";
            if (staging) {
              EXPECT_EQ(reused.features.buffer(), staging) << "staging reused";
            }
            staging = reused.features.buffer();
          }
        }
    EXPECT_GT(views, 0);
    EXPECT_GT(copies, 0);
    EXPECT_EQ(allocations, 4) << "one staging pair, reused by every wrapped batch";
  }
  Batch b;
  EXPECT_THROW(BatchSource(data, DataType::FP32).shard(0, 10, 0, 3, b), Error);
}

}  // namespace
}  // namespace ctp::samples
