#include "samples/feed_sources.h"

#include <cmath>

namespace ctp::samples {
namespace {

// A counter-based generator: the value at (seed, a, b, c) does not depend
// on what was drawn before, so any worker computes any row alone.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t hash(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  return mix(mix(mix(mix(seed) ^ a) ^ b) ^ c);
}

double uniform(uint64_t bits) {  // (0, 1]
  return (static_cast<double>(bits >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

// A standard normal (Box-Muller) from two counter-based uniforms.
double normal(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  const double u1 = uniform(hash(seed, a, b, 2 * c));
  const double u2 = uniform(hash(seed, a, b, 2 * c + 1));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

Tensor allocate_or_default(const FeedSource::HostAllocator& allocate, DataType dtype,
                           std::vector<int64_t> shape) {
  return allocate ? allocate(dtype, std::move(shape)) : Tensor(dtype, std::move(shape));
}

// `into`'s tensor i (of `count`) with this dtype and shape: kept when it has
// them (the staging of the previous step), else made.
Tensor& staged(FeedBatch& into, std::size_t i, std::size_t count, DataType dtype,
               const std::vector<int64_t>& shape, const FeedSource::HostAllocator& allocate) {
  into.tensors.resize(count);  // before taking a reference into it
  Tensor& t = into.tensors[i];
  if (!t.initialized() || t.dtype() != dtype || t.shape() != shape)
    t = allocate_or_default(allocate, dtype, shape);
  return t;
}

class ClusterFeeds final : public FeedSource {
 public:
  ClusterFeeds(const ClusterData& data, DataType dtype, HostAllocator allocate)
      : source_(data, dtype, std::move(allocate)) {}
  void shard(int64_t step, int64_t global_batch, int worker, int workers,
             FeedBatch& into) const override {
    source_.shard(step, global_batch, worker, workers, into.clusters);
    into.tensors = {into.clusters.features, into.clusters.labels};
  }

 private:
  BatchSource source_;
};

// Streams of the generator, so images, labels and templates never share draws.
enum Stream : uint64_t { kTemplate = 1, kLabel = 2, kNoise = 3, kToken = 4 };

class ImageFeeds final : public FeedSource {
 public:
  ImageFeeds(const ResNetConfig& model, uint64_t seed, HostAllocator allocate)
      : model_(model), seed_(seed), allocate_(std::move(allocate)) {
    const int64_t pixels = model.channels * model.image_size * model.image_size;
    templates_.resize(static_cast<std::size_t>(model.classes * pixels));
    for (int64_t c = 0; c < model.classes; ++c)
      for (int64_t e = 0; e < pixels; ++e)
        templates_[static_cast<std::size_t>(c * pixels + e)] = static_cast<float>(
            normal(seed, kTemplate, static_cast<uint64_t>(c), static_cast<uint64_t>(e)));
  }

  void shard(int64_t step, int64_t global_batch, int worker, int workers,
             FeedBatch& into) const override {
    const int64_t rows = global_batch / workers;
    const int64_t size = model_.image_size;
    const int64_t pixels = model_.channels * size * size;
    Tensor& images =
        staged(into, 0, 2, DataType::FP32, {rows, model_.channels, size, size}, allocate_);
    Tensor& labels = staged(into, 1, 2, DataType::INT64, {rows, 1}, allocate_);
    float* image = images.data<float>();
    int64_t* label = labels.data<int64_t>();
    for (int64_t r = 0; r < rows; ++r) {
      const auto row = static_cast<uint64_t>(worker * rows + r);  // in the global batch
      const auto s = static_cast<uint64_t>(step);
      const auto c = static_cast<int64_t>(hash(seed_, kLabel, s, row) %
                                          static_cast<uint64_t>(model_.classes));
      label[r] = c;
      const float* base = templates_.data() + c * pixels;
      for (int64_t e = 0; e < pixels; ++e)
        image[r * pixels + e] =
            base[e] + 0.5f * static_cast<float>(normal(seed_, kNoise + (s << 8), row,
                                                       static_cast<uint64_t>(e)));
    }
  }

 private:
  ResNetConfig model_;
  uint64_t seed_;
  HostAllocator allocate_;
  std::vector<float> templates_;  // [classes, channels * size * size]
};

class TokenFeeds final : public FeedSource {
 public:
  TokenFeeds(const BertConfig& model, uint64_t seed, HostAllocator allocate)
      : model_(model), seed_(seed), allocate_(std::move(allocate)) {}

  void shard(int64_t step, int64_t global_batch, int worker, int workers,
             FeedBatch& into) const override {
    const int64_t rows = global_batch / workers;
    const int64_t seq = model_.seq_len;
    const auto feed = [&](std::size_t i, std::vector<int64_t> shape) {
      return staged(into, i, 4, DataType::INT64, shape, allocate_).data<int64_t>();
    };
    int64_t* ids = feed(0, {rows, seq});
    int64_t* positions = feed(1, {rows, seq});
    int64_t* segments = feed(2, {rows, seq});
    int64_t* labels = feed(3, {rows, seq, 1});
    for (int64_t r = 0; r < rows; ++r) {
      const auto row = static_cast<uint64_t>(worker * rows + r);
      for (int64_t t = 0; t < seq; ++t) {
        const int64_t i = r * seq + t;
        ids[i] = static_cast<int64_t>(hash(seed_, kToken, static_cast<uint64_t>(step),
                                           row * static_cast<uint64_t>(seq) +
                                               static_cast<uint64_t>(t)) %
                                      static_cast<uint64_t>(model_.vocab));
        positions[i] = t;
        segments[i] = (model_.type_vocab > 1 && 2 * t >= seq) ? 1 : 0;
        labels[i] = ids[i] % model_.classes;
      }
    }
  }

 private:
  BertConfig model_;
  uint64_t seed_;
  HostAllocator allocate_;
};

}  // namespace

std::unique_ptr<FeedSource> cluster_feeds(const ClusterData& data, DataType dtype,
                                          FeedSource::HostAllocator allocate) {
  return std::make_unique<ClusterFeeds>(data, dtype, std::move(allocate));
}

std::unique_ptr<FeedSource> image_feeds(const ResNetConfig& model, uint64_t seed,
                                        FeedSource::HostAllocator allocate) {
  return std::make_unique<ImageFeeds>(model, seed, std::move(allocate));
}

std::unique_ptr<FeedSource> token_feeds(const BertConfig& model, uint64_t seed,
                                        FeedSource::HostAllocator allocate) {
  return std::make_unique<TokenFeeds>(model, seed, std::move(allocate));
}

}  // namespace ctp::samples
