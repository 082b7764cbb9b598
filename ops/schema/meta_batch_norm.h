// The rules of batch_norm and batch_norm_grad (Paddle's BatchNormInferMeta),
// written once for the schema's inference (ops/schema/defs_cv.cc) and the CPU
// and CUDA kernels; see meta_math.h.
#pragma once
#include <cstdint>

#include "ops/schema/op_context.h"

namespace ctp::meta {

// X (rank 2 to 5) is read as [outer, channels, inner]: NCHW (data_layout
// "NCHW" or "AnyLayout") has the channels at axis 1, NHWC last. Scale, Bias,
// Mean and Variance are [channels]; Y has X's shape, MeanOut, VarianceOut,
// SavedMean and SavedVariance are [channels]. Statistics are FP32 when X is
// FP16 or BF16, else X's dtype.
struct BatchNormMeta {
  int64_t outer, channels, inner;  // -1 where unknown
  // Whether the batch's own statistics normalize X (training), or Mean and
  // Variance do (is_test without trainable_statistics, or use_global_stats).
  bool batch_stats;
  double epsilon, momentum;
  Shape channel_shape;  // [channels]
  DataType x_dtype, stats_dtype;
};
BatchNormMeta batch_norm(const OpContext& ctx, TensorMeta x, TensorMeta scale, TensorMeta bias,
                         TensorMeta mean, TensorMeta variance);
// batch_norm_grad: the same view of X; Scale, SavedMean and SavedVariance are
// [channels], Y@GRAD has X's shape. Without batch statistics it reads the
// running Mean and Variance, which it then requires.
BatchNormMeta batch_norm_grad(const OpContext& ctx, TensorMeta x, TensorMeta scale,
                              TensorMeta saved_mean, TensorMeta saved_variance, TensorMeta dy);

}  // namespace ctp::meta
