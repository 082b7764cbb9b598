#include "samples/cluster_data.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "program_ir/error.h"

namespace ctp::samples {
namespace {

// Standard normals from 53-bit uniforms (Box-Muller): the same numbers on
// every platform, unlike std::normal_distribution.
class Normal {
 public:
  explicit Normal(uint64_t seed) : engine_(seed) {}
  double next() {
    const double u1 = 1.0 - static_cast<double>(engine_() >> 11) * 0x1.0p-53;
    const double u2 = static_cast<double>(engine_() >> 11) * 0x1.0p-53;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace

ClusterData make_clusters(int64_t samples, int64_t dim, int64_t classes, uint64_t seed,
                          double separation, double spread) {
  if (samples < 1 || dim < 1 || classes < 2)
    throw Error("cluster data needs samples >= 1, dim >= 1 and classes >= 2");
  Normal normal(seed);
  std::vector<double> centres(static_cast<std::size_t>(classes * dim));
  for (double& c : centres) c = separation * normal.next();
  ClusterData data;
  data.dim = dim;
  data.classes = classes;
  data.features.resize(static_cast<std::size_t>(samples * dim));
  data.labels.resize(static_cast<std::size_t>(samples));
  for (int64_t i = 0; i < samples; ++i) {
    const int64_t label = i % classes;
    data.labels[static_cast<std::size_t>(i)] = label;
    for (int64_t d = 0; d < dim; ++d)
      data.features[static_cast<std::size_t>(i * dim + d)] =
          centres[static_cast<std::size_t>(label * dim + d)] + spread * normal.next();
  }
  return data;
}

namespace {

Batch gather(const ClusterData& data, const std::vector<int64_t>& indices, DataType dtype) {
  const auto n = static_cast<int64_t>(indices.size());
  Batch b{Tensor(dtype, {n, data.dim}), Tensor(DataType::INT64, {n, 1})};
  for (int64_t r = 0; r < n; ++r) {
    const int64_t i = indices[static_cast<std::size_t>(r)];
    b.labels.data<int64_t>()[r] = data.labels[static_cast<std::size_t>(i)];
    for (int64_t d = 0; d < data.dim; ++d) {
      const double v = data.features[static_cast<std::size_t>(i * data.dim + d)];
      if (dtype == DataType::FP64) b.features.data<double>()[r * data.dim + d] = v;
      else b.features.data<float>()[r * data.dim + d] = static_cast<float>(v);
    }
  }
  return b;
}

void check_dtype(DataType dtype) {
  if (dtype != DataType::FP32 && dtype != DataType::FP64)
    throw Error("cluster data comes as FP32 or FP64, not " + std::string(to_string(dtype)));
}

}  // namespace

Batch shard_batch(const ClusterData& data, int64_t step, int64_t global_batch, int rank,
                  int world, DataType dtype) {
  check_dtype(dtype);
  if (world < 1 || rank < 0 || rank >= world || global_batch < world || global_batch % world)
    throw Error("global batch " + std::to_string(global_batch) + " cannot be split evenly over " +
                std::to_string(world) + " workers (rank " + std::to_string(rank) + ")");
  const int64_t local = global_batch / world;
  std::vector<int64_t> indices(static_cast<std::size_t>(local));
  const int64_t first = step * global_batch + rank * local;
  for (int64_t r = 0; r < local; ++r) indices[static_cast<std::size_t>(r)] = (first + r) % data.size();
  return gather(data, indices, dtype);
}

Batch rows(const ClusterData& data, int64_t begin, int64_t end, DataType dtype) {
  check_dtype(dtype);
  if (begin < 0 || end > data.size() || begin > end)
    throw Error("rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                ") are outside the data set of " + std::to_string(data.size()));
  std::vector<int64_t> indices;
  for (int64_t i = begin; i < end; ++i) indices.push_back(i);
  return gather(data, indices, dtype);
}

BatchSource::BatchSource(const ClusterData& data, DataType dtype)
    : features_(rows(data, 0, data.size(), dtype).features), labels_(data.labels),
      dim_(data.dim) {}

void BatchSource::shard(int64_t step, int64_t global_batch, int rank, int world,
                        Batch& into) const {
  const auto samples = static_cast<int64_t>(labels_.size());
  if (world < 1 || rank < 0 || rank >= world || global_batch < world || global_batch % world)
    throw Error("global batch " + std::to_string(global_batch) + " cannot be split evenly over " +
                std::to_string(world) + " workers (rank " + std::to_string(rank) + ")");
  const int64_t local = global_batch / world;
  const DataType dtype = features_.dtype();
  const std::vector<int64_t> shape{local, dim_};
  if (!into.features.initialized() || into.features.dtype() != dtype ||
      into.features.shape() != shape)
    into.features = Tensor(dtype, shape);
  if (!into.labels.initialized() || into.labels.shape() != std::vector<int64_t>{local, 1})
    into.labels = Tensor(DataType::INT64, {local, 1});
  const std::size_t row_bytes = static_cast<std::size_t>(dim_) * element_size(dtype);
  const char* src = static_cast<const char*>(features_.raw_data());
  char* dst = static_cast<char*>(into.features.raw_data());
  const int64_t first = step * global_batch + rank * local;
  // Runs of consecutive rows up to the wrap-around: one memcpy each.
  for (int64_t r = 0; r < local;) {
    const int64_t i = (first + r) % samples;
    const int64_t run = std::min(local - r, samples - i);
    std::memcpy(dst + static_cast<std::size_t>(r) * row_bytes,
                src + static_cast<std::size_t>(i) * row_bytes,
                static_cast<std::size_t>(run) * row_bytes);
    std::memcpy(into.labels.data<int64_t>() + r, labels_.data() + i,
                static_cast<std::size_t>(run) * sizeof(int64_t));
    r += run;
  }
}

}  // namespace ctp::samples
