#include "ops/schema/meta_conv.h"

#include <algorithm>
#include <string>
#include <vector>

#include "ops/schema/shape_rules.h"

namespace ctp::meta {
namespace {

const char* const kDimName[2] = {"height", "width"};

// data_format (conv2d, pool2d): NCHW ("AnyLayout" is Paddle's old default and
// means the same); NHWC is Paddle's too but not implemented here.
void require_nchw(const OpContext& ctx) {
  const std::string format = ctx.string_attr("data_format");
  if (format == "NCHW" || format == "AnyLayout") return;
  if (format == "NHWC") ctx.fail("data_format NHWC is not supported (only NCHW)");
  ctx.fail("data_format '" + format + "' is not one of NCHW, NHWC");
}

// A (height, width) attribute whose values are at least `least`.
std::array<int64_t, 2> pair_attr(const OpContext& ctx, const std::string& name, int64_t least) {
  const std::vector<int64_t> v = ctx.ints_attr(name);
  if (v.size() != 2)
    ctx.fail(name + " " + shape_to_string(v) + " has " + std::to_string(v.size()) +
             " values; expected 2 (height, width)");
  for (int64_t x : v)
    if (x < least)
      ctx.fail(name + " " + shape_to_string(v) + " must be " +
               (least > 0 ? "positive" : "non-negative"));
  return {v[0], v[1]};
}

// paddings: 2 values (height, width: both sides) or 4 (top, bottom, left, right).
std::array<int64_t, 4> explicit_paddings(const OpContext& ctx) {
  const std::vector<int64_t> v = ctx.ints_attr("paddings");
  if (v.size() != 2 && v.size() != 4)
    ctx.fail("paddings " + shape_to_string(v) + " has " + std::to_string(v.size()) +
             " values; expected 2 (height, width) or 4 (top, bottom, left, right)");
  for (int64_t x : v)
    if (x < 0) ctx.fail("paddings " + shape_to_string(v) + " must be non-negative");
  if (v.size() == 2) return {v[0], v[0], v[1], v[1]};
  return {v[0], v[1], v[2], v[3]};
}

// padding_algorithm: EXPLICIT keeps `paddings`; VALID pads nothing; SAME pads
// so that the output is ceil(input / stride), the odd cell at the end, with
// no dilation (as Paddle's UpdatePaddingAndDilation). Returns whether SAME.
bool apply_padding_algorithm(const OpContext& ctx, Window2d& w, const Shape& in_hw) {
  const std::string algorithm = ctx.string_attr("padding_algorithm");
  if (algorithm == "EXPLICIT") return false;
  if (algorithm == "VALID") {
    w.pad = {0, 0, 0, 0};
    return false;
  }
  if (algorithm != "SAME")
    ctx.fail("padding_algorithm '" + algorithm + "' is not one of EXPLICIT, SAME, VALID");
  for (std::size_t d = 0; d < 2; ++d) {
    w.dilation[d] = 1;
    w.pad[2 * d] = w.pad[2 * d + 1] = 0;
    if (in_hw[d] < 0 || w.kernel[d] < 0) continue;  // known at run time
    const int64_t out = (in_hw[d] + w.stride[d] - 1) / w.stride[d];
    const int64_t sum = std::max<int64_t>((out - 1) * w.stride[d] + w.kernel[d] - in_hw[d], 0);
    w.pad[2 * d] = sum / 2;
    w.pad[2 * d + 1] = sum - sum / 2;
  }
  return true;
}

// One output dim of a window of `span` cells (the dilated kernel) sliding
// over the padded input, rounding down (or up: ceil_mode); -1 when unknown.
int64_t window_output(const OpContext& ctx, const Window2d& w, std::size_t d, int64_t in,
                      bool ceil_mode) {
  if (in < 0 || w.kernel[d] < 0) return -1;
  const int64_t span = w.dilation[d] * (w.kernel[d] - 1) + 1;
  const int64_t padded = in + w.pad[2 * d] + w.pad[2 * d + 1];
  if (padded < span)
    ctx.fail("input " + std::string(kDimName[d]) + " " + std::to_string(in) + " with paddings " +
             std::to_string(w.pad[2 * d]) + " + " + std::to_string(w.pad[2 * d + 1]) +
             " is smaller than the window's " + std::to_string(span));
  return (padded - span + (ceil_mode ? w.stride[d] - 1 : 0)) / w.stride[d] + 1;
}

void require_rank4(const OpContext& ctx, std::string_view slot, const Shape& shape,
                   const char* layout) {
  if (shape.size() != 4)
    ctx.fail(ctx.describe_input(slot) + " has shape " + shape_to_string(shape) +
             "; expected rank 4 (" + layout + ")");
}

void require_shape(const OpContext& ctx, std::string_view slot, const Shape& actual,
                   const Shape& expected) {
  if (!compatible(actual, expected))
    ctx.fail(ctx.describe_input(slot) + " has shape " + shape_to_string(actual) + ", expected " +
             shape_to_string(expected));
}

// Paddle's oneDNN fusions ride on conv2d as inputs and attributes; ctp
// computes the plain convolution, so an op that asks for one is refused.
void refuse_fusions(const OpContext& ctx) {
  for (const char* slot : {"Bias", "ResidualData"})
    if (ctx.has_input(slot))
      ctx.fail(std::string("input ") + slot + " (a oneDNN fusion) is not supported");
  for (const char* flag : {"fuse_relu", "fuse_residual_connection", "fuse_brelu",
                           "fuse_relu_before_depthwise_conv", "use_addto"})
    if (ctx.bool_attr(flag)) ctx.fail(std::string(flag) + " (a fusion) is not supported");
  const std::string activation = ctx.string_attr("fuse_activation");
  if (!activation.empty())
    ctx.fail("fuse_activation '" + activation + "' (a fusion) is not supported");
}

}  // namespace

Conv2dMeta conv2d(const OpContext& ctx, TensorMeta input, TensorMeta filter) {
  require_nchw(ctx);
  refuse_fusions(ctx);
  const Shape& in = input.shape;
  const Shape& f = filter.shape;
  require_rank4(ctx, "Input", in, "N, C, H, W");
  require_rank4(ctx, "Filter", f, "M, C / groups, KH, KW");
  if (filter.dtype != input.dtype)
    ctx.fail(ctx.describe_input("Filter") + " is " + std::string(to_string(filter.dtype)) +
             " but " + ctx.describe_input("Input") + " is " +
             std::string(to_string(input.dtype)));
  Conv2dMeta m;
  m.groups = ctx.int_attr("groups");
  if (m.groups < 1) ctx.fail("groups " + std::to_string(m.groups) + " must be positive");
  m.batch = in[0];
  m.in_channels = in[1];
  m.in_h = in[2];
  m.in_w = in[3];
  m.out_channels = f[0];
  if (in[1] >= 0 && f[1] >= 0 && in[1] != f[1] * m.groups)
    ctx.fail(ctx.describe_input("Input") + " " + shape_to_string(in) + " has " +
             std::to_string(in[1]) + " channels, but " + ctx.describe_input("Filter") + " " +
             shape_to_string(f) + " with groups " + std::to_string(m.groups) + " reads " +
             std::to_string(f[1] * m.groups));
  if (f[0] >= 0 && f[0] % m.groups != 0)
    ctx.fail(ctx.describe_input("Filter") + " " + shape_to_string(f) + " has " +
             std::to_string(f[0]) + " output channels, not a multiple of groups " +
             std::to_string(m.groups));
  Window2d& w = m.window;
  w.kernel = {f[2], f[3]};
  w.stride = pair_attr(ctx, "strides", 1);
  w.dilation = pair_attr(ctx, "dilations", 1);
  w.pad = explicit_paddings(ctx);
  apply_padding_algorithm(ctx, w, {in[2], in[3]});
  m.out_h = window_output(ctx, w, 0, in[2], false);
  m.out_w = window_output(ctx, w, 1, in[3], false);
  m.out_shape = {m.batch, m.out_channels, m.out_h, m.out_w};
  return m;
}

Conv2dMeta conv2d_grad(const OpContext& ctx, TensorMeta input, TensorMeta filter,
                       TensorMeta dout) {
  Conv2dMeta m = conv2d(ctx, input, filter);
  require_shape(ctx, "Output@GRAD", dout.shape, m.out_shape);
  return m;
}

Pool2dMeta pool2d(const OpContext& ctx, TensorMeta x) {
  require_nchw(ctx);
  const Shape& in = x.shape;
  require_rank4(ctx, "X", in, "N, C, H, W");
  Pool2dMeta m;
  const std::string type = ctx.string_attr("pooling_type");
  if (type != "max" && type != "avg")
    ctx.fail("pooling_type '" + type + "' is not one of max, avg");
  m.max = type == "max";
  m.batch = in[0];
  m.channels = in[1];
  m.in_h = in[2];
  m.in_w = in[3];
  m.adaptive = ctx.bool_attr("adaptive");
  m.exclusive = ctx.bool_attr("exclusive");
  const bool global = ctx.bool_attr("global_pooling");
  Window2d& w = m.window;
  // Global pooling's window is the input, whatever ksize says (saved models
  // write [0, 0] there).
  w.kernel = global ? std::array<int64_t, 2>{in[2], in[3]} : pair_attr(ctx, "ksize", 1);
  w.stride = pair_attr(ctx, "strides", 1);
  w.dilation = {1, 1};
  w.pad = explicit_paddings(ctx);
  apply_padding_algorithm(ctx, w, {in[2], in[3]});
  // Global and adaptive pooling ignore paddings, as in Paddle.
  if (global || m.adaptive) w.pad = {0, 0, 0, 0};
  if (m.adaptive) {  // the output is ksize (global: the input, one cell per window)
    m.out_h = w.kernel[0];
    m.out_w = w.kernel[1];
  } else if (global) {
    m.out_h = m.out_w = 1;
  } else {
    const bool ceil_mode = ctx.bool_attr("ceil_mode");
    m.out_h = window_output(ctx, w, 0, in[2], ceil_mode);
    m.out_w = window_output(ctx, w, 1, in[3], ceil_mode);
  }
  m.out_shape = {m.batch, m.channels, m.out_h, m.out_w};
  return m;
}

Pool2dMeta pool2d_grad(const OpContext& ctx, TensorMeta x, TensorMeta out, TensorMeta dout) {
  Pool2dMeta m = pool2d(ctx, x);
  require_shape(ctx, "Out", out.shape, m.out_shape);
  require_shape(ctx, "Out@GRAD", dout.shape, m.out_shape);
  return m;
}

}  // namespace ctp::meta
