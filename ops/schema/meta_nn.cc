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
  if (label == m.ignore_index) return -1;
  if (label < 0 || label >= m.classes)
    ctx.fail("Label " + std::to_string(label) + " at row " + std::to_string(row) +
             " is outside [0, " + std::to_string(m.classes) + ")");
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

}  // namespace ctp::meta
