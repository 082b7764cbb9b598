#include "samples/cluster_data.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>

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

BatchSource::BatchSource(const ClusterData& data, DataType dtype, HostAllocator allocate)
    : allocate_(allocate ? std::move(allocate)
                         : [](DataType t, std::vector<int64_t> shape) {
                             return Tensor(t, std::move(shape));
                           }),
      dim_(data.dim) {
  Batch all = rows(data, 0, data.size(), dtype);
  features_ = allocate_(dtype, all.features.shape());
  labels_ = allocate_(DataType::INT64, all.labels.shape());
  std::memcpy(features_.raw_data(), all.features.raw_data(), all.features.bytes());
  std::memcpy(labels_.raw_data(), all.labels.raw_data(), all.labels.bytes());
}

void BatchSource::shard(int64_t step, int64_t global_batch, int rank, int world,
                        Batch& into) const {
  const int64_t samples = labels_.numel();
  if (samples == 0) throw Error("the data set is empty: no batch can be drawn from it");
  if (world < 1 || rank < 0 || rank >= world || global_batch < world || global_batch % world)
    throw Error("global batch " + std::to_string(global_batch) + " cannot be split evenly over " +
                std::to_string(world) + " workers (rank " + std::to_string(rank) + ")");
  const int64_t local = global_batch / world;
  const DataType dtype = features_.dtype();
  const std::vector<int64_t> shape{local, dim_};
  const std::vector<int64_t> label_shape{local, 1};
  const std::size_t row_bytes = static_cast<std::size_t>(dim_) * element_size(dtype);
  const int64_t first = (step * global_batch + rank * local) % samples;
  if (first + local <= samples) {
    into.features = Tensor::view(features_.buffer(),
                                 features_.offset() + static_cast<std::size_t>(first) * row_bytes,
                                 dtype, shape);
    into.labels = Tensor::view(labels_.buffer(),
                               labels_.offset() + static_cast<std::size_t>(first) * sizeof(int64_t),
                               DataType::INT64, label_shape);
    return;
  }
  // Wrapped: copied into the batch's own staging buffers.
  if (!into.wrapped_features.initialized() || into.wrapped_features.dtype() != dtype ||
      into.wrapped_features.shape() != shape)
    into.wrapped_features = allocate_(dtype, shape);
  if (!into.wrapped_labels.initialized() || into.wrapped_labels.shape() != label_shape)
    into.wrapped_labels = allocate_(DataType::INT64, label_shape);
  into.features = into.wrapped_features;
  into.labels = into.wrapped_labels;
  const char* src = static_cast<const char*>(features_.raw_data());
  char* dst = static_cast<char*>(into.features.raw_data());
  // Runs of consecutive rows up to the wrap-around: one memcpy each.
  for (int64_t r = 0; r < local;) {
    const int64_t i = (first + r) % samples;
    const int64_t run = std::min(local - r, samples - i);
    std::memcpy(dst + static_cast<std::size_t>(r) * row_bytes,
                src + static_cast<std::size_t>(i) * row_bytes,
                static_cast<std::size_t>(run) * row_bytes);
    std::memcpy(into.labels.data<int64_t>() + r, labels_.data<int64_t>() + i,
                static_cast<std::size_t>(run) * sizeof(int64_t));
    r += run;
  }
}

}  // namespace ctp::samples
