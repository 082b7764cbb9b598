// The rules of the 2-D window ops (conv2d, depthwise_conv2d, pool2d and their
// gradients), written once for the schema's inference (ops/schema/defs_cv.cc)
// and the CPU and CUDA kernels; see meta_math.h. They follow Paddle's
// ConvInferMeta and Pool2DInferMeta: paddings of 2 values (height, width) or
// 4 (top, bottom, left, right), padding_algorithm EXPLICIT, SAME or VALID.
// Inputs are NCHW; data_format NHWC is refused with an error naming the op.
#pragma once
#include <array>
#include <cstdint>

#include "ops/schema/op_context.h"

namespace ctp::meta {

// Where a window reads its input in one spatial dim (0: height, 1: width).
struct Window2d {
  std::array<int64_t, 2> kernel{};    // the window (pool2d: ksize, or the input for global)
  std::array<int64_t, 2> stride{};
  std::array<int64_t, 2> dilation{};  // 1 for pool2d
  std::array<int64_t, 4> pad{};       // top, bottom, left, right, after padding_algorithm
  int64_t pad_before(int dim) const { return pad[static_cast<std::size_t>(2 * dim)]; }
};

// conv2d and depthwise_conv2d: Input [N, C, H, W], Filter [M, C / groups, KH,
// KW], Output [N, M, OH, OW]. Dims are -1 where unknown.
struct Conv2dMeta {
  int64_t batch, in_channels, in_h, in_w;
  int64_t out_channels, out_h, out_w;
  int64_t groups;
  Window2d window;
  Shape out_shape;
};
Conv2dMeta conv2d(const OpContext& ctx, TensorMeta input, TensorMeta filter);
// conv2d_grad: the forward rules, and Output@GRAD must have Output's shape.
Conv2dMeta conv2d_grad(const OpContext& ctx, TensorMeta input, TensorMeta filter,
                       TensorMeta dout);

// pool2d: X [N, C, H, W] to Out [N, C, OH, OW]; `max` for pooling_type
// "max", else "avg". A window starts at o * stride - the top (left) padding
// and is clipped to the input; avg divides by the clipped window when
// `exclusive` or `adaptive`, else by the window clipped to the input plus
// that padding (Paddle's CPU kernel). Adaptive windows split the input
// evenly: [floor(o * H / OH), ceil((o + 1) * H / OH)).
struct Pool2dMeta {
  int64_t batch, channels, in_h, in_w, out_h, out_w;
  Window2d window;
  bool max, adaptive, exclusive;
  Shape out_shape;
};
Pool2dMeta pool2d(const OpContext& ctx, TensorMeta x);
// pool2d_grad: the forward rules on X; Out and Out@GRAD have Out's shape.
Pool2dMeta pool2d_grad(const OpContext& ctx, TensorMeta x, TensorMeta out, TensorMeta dout);

}  // namespace ctp::meta
