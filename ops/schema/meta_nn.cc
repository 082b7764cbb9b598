#include "ops/schema/meta_nn.h"

#include <string_view>

#include "ops/schema/shape_rules.h"

namespace ctp::meta {
namespace {

// Whether `actual` can be `expected`: compatible, or (a row of hard labels
// written flat) as many elements.
bool fits(const Shape& actual, const Shape& expected) {
  if (compatible(actual, expected)) return true;
  const int64_t a = product(actual), e = product(expected);
  return a >= 0 && e >= 0 && a == e;
}

// The rules on the logits (forward) or the softmax (gradient) in `slot`.
SoftmaxCrossEntropyMeta class_rules(const OpContext& ctx, std::string_view slot,
                                    TensorMeta logits, TensorMeta label) {
  const Shape& shape = logits.shape;
  if (shape.empty()) ctx.fail(ctx.describe_input(slot) + " must have rank 1 or more");
  SoftmaxCrossEntropyMeta m;
  m.axis = normalize_axis(ctx, ctx.int_attr("axis"), shape.size(), "axis");
  m.outer = product(shape, 0, m.axis);
  m.classes = shape[m.axis];
  m.inner = product(shape, m.axis + 1, shape.size());
  m.loss_shape = shape;
  m.loss_shape[m.axis] = 1;
  m.soft_label = ctx.bool_attr("soft_label");
  m.use_softmax = ctx.bool_attr("use_softmax");
  m.ignore_index = ctx.int_attr("ignore_index");
  const Shape& expected = m.soft_label ? shape : m.loss_shape;
  if (!m.soft_label && label.dtype != DataType::INT64 && label.dtype != DataType::INT32)
    ctx.fail(ctx.describe_input("Label") + " has dtype " + std::string(to_string(label.dtype)) +
             "; hard labels are INT64 or INT32");
  if (m.soft_label ? !compatible(label.shape, expected) : !fits(label.shape, expected))
    ctx.fail(ctx.describe_input("Label") + " has shape " + shape_to_string(label.shape) +
             ", expected " + shape_to_string(expected) + " for " + ctx.describe_input(slot) +
             " " + shape_to_string(shape) + (m.soft_label ? " (soft labels)" : " (hard labels)"));
  return m;
}

}  // namespace

void relu_grad(const OpContext& ctx, TensorMeta gate, TensorMeta dout) {
  if (!compatible(gate.shape, dout.shape))
    ctx.fail(ctx.describe_input("Out@GRAD") + " " + shape_to_string(dout.shape) +
             " does not match the forward tensor " + shape_to_string(gate.shape));
}

SoftmaxCrossEntropyMeta softmax_with_cross_entropy(const OpContext& ctx, TensorMeta logits,
                                                   TensorMeta label) {
  return class_rules(ctx, "Logits", logits, label);
}

int64_t hard_label_class(const OpContext& ctx, const SoftmaxCrossEntropyMeta& m, int64_t row,
                         int64_t label) {
  return hard_label_class(ctx, m.classes, m.ignore_index, row, label);
}

int64_t hard_label_class(const OpContext& ctx, int64_t classes, int64_t ignore_index, int64_t row,
                         int64_t label) {
  if (label == ignore_index) return -1;
  if (label < 0 || label >= classes)
    ctx.fail("Label " + std::to_string(label) + " at row " + std::to_string(row) +
             " is outside [0, " + std::to_string(classes) + ")");
  return label;
}

SoftmaxCrossEntropyMeta softmax_with_cross_entropy_grad(const OpContext& ctx, TensorMeta softmax,
                                                        TensorMeta label, TensorMeta dloss) {
  SoftmaxCrossEntropyMeta m = class_rules(ctx, "Softmax", softmax, label);
  if (!fits(dloss.shape, m.loss_shape))
    ctx.fail(ctx.describe_input("Loss@GRAD") + " has shape " + shape_to_string(dloss.shape) +
             ", expected " + shape_to_string(m.loss_shape));
  return m;
}

SoftmaxMeta softmax(const OpContext& ctx, TensorMeta x) {
  const Shape& shape = x.shape;
  const int64_t axis = ctx.int_attr("axis");
  if (shape.empty()) {  // a 0-D tensor is one class: axis -1 or 0
    normalize_axis(ctx, axis, 1, "axis");
    return {0, 1, 1, 1};
  }
  SoftmaxMeta m;
  m.axis = normalize_axis(ctx, axis, shape.size(), "axis");
  m.outer = product(shape, 0, m.axis);
  m.classes = shape[m.axis];
  m.inner = product(shape, m.axis + 1, shape.size());
  return m;
}

SoftmaxMeta softmax_grad(const OpContext& ctx, TensorMeta out, TensorMeta dout) {
  if (!compatible(out.shape, dout.shape))
    ctx.fail(ctx.describe_input("Out@GRAD") + " has shape " + shape_to_string(dout.shape) +
             ", expected the shape of " + ctx.describe_input("Out") + " " +
             shape_to_string(out.shape));
  return softmax(ctx, out);
}

CrossEntropy2Meta cross_entropy2(const OpContext& ctx, TensorMeta x, TensorMeta label) {
  const Shape& xs = x.shape;
  if (xs.empty()) ctx.fail(ctx.describe_input("X") + " must have rank 1 or more");
  const std::size_t rank = xs.size();
  CrossEntropy2Meta m;
  m.x_shape = xs;
  m.rows = product(xs, 0, rank - 1);
  m.classes = xs.back();
  m.ignore_index = ctx.int_attr("ignore_index");
  if (label.dtype != DataType::INT64 && label.dtype != DataType::INT32)
    ctx.fail(ctx.describe_input("Label") + " has dtype " + std::string(to_string(label.dtype)) +
             "; hard labels are INT64 or INT32");
  // Label is X's shape with the last dim 1, or with it cut off.
  const Shape& ls = label.shape;
  const Shape lead(xs.begin(), xs.end() - 1);
  const bool same_rank = ls.size() == rank && ls.back() <= 1 && ls.back() != 0 &&
                         compatible(Shape(ls.begin(), ls.end() - 1), lead);
  if (!same_rank && !compatible(ls, lead)) {
    Shape with_one = lead;
    with_one.push_back(1);
    ctx.fail(ctx.describe_input("Label") + " has shape " + shape_to_string(ls) + ", expected " +
             shape_to_string(with_one) + " or " + shape_to_string(lead) + " for " +
             ctx.describe_input("X") + " " + shape_to_string(xs) + " (one class per row)");
  }
  m.y_shape = ls;
  if (same_rank) m.y_shape.back() = 1;
  m.match_x_shape = xs;
  m.match_x_shape.back() = 1;
  m.xshape_shape = xs;
  m.xshape_shape.push_back(0);
  return m;
}

CrossEntropy2Meta cross_entropy_grad2(const OpContext& ctx, TensorMeta xshape, TensorMeta label,
                                      TensorMeta match_x, TensorMeta dy) {
  if (xshape.shape.size() < 2)
    ctx.fail(ctx.describe_input("XShape") + " has shape " + shape_to_string(xshape.shape) +
             "; it must be the forward X's shape (rank 1 or more) plus a 0 dim");
  const Shape xs(xshape.shape.begin(), xshape.shape.end() - 1);
  CrossEntropy2Meta m = cross_entropy2(ctx, TensorMeta{xs, dy.dtype}, label);
  if (!compatible(dy.shape, m.y_shape))
    ctx.fail(ctx.describe_input("Y@GRAD") + " has shape " + shape_to_string(dy.shape) +
             ", expected " + shape_to_string(m.y_shape));
  if (!compatible(match_x.shape, m.match_x_shape))
    ctx.fail(ctx.describe_input("MatchX") + " has shape " + shape_to_string(match_x.shape) +
             ", expected " + shape_to_string(m.match_x_shape));
  return m;
}

}  // namespace ctp::meta
