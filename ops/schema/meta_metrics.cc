#include "ops/schema/meta_metrics.h"

#include <string>

#include "ops/schema/shape_rules.h"

namespace ctp::meta {
namespace {

std::string dtype_name(DataType t) { return std::string(to_string(t)); }

void require_int64(const OpContext& ctx, std::string_view slot, TensorMeta t) {
  if (t.dtype != DataType::INT64)
    ctx.fail(ctx.describe_input(slot) + " has dtype " + dtype_name(t.dtype) + "; it must be INT64");
}

}  // namespace

TopKMeta top_k(const OpContext& ctx, TensorMeta x, std::optional<int64_t> k_given) {
  const Shape& shape = x.shape;
  TopKMeta m;
  // v1 has neither attribute: the last axis, largest first.
  const int64_t axis = ctx.int_attr("axis", -1);
  m.largest = ctx.bool_attr("largest", true);
  const bool k_tensor = ctx.has_input("K");
  if (k_given) m.k = *k_given;
  else m.k = k_tensor ? -1 : ctx.int_attr("k");  // declared vars: K's value comes at run time
  if (shape.empty()) {
    normalize_axis(ctx, axis, 1, "axis");
    m.outer = m.n = m.inner = 1;
  } else {
    const std::size_t a = normalize_axis(ctx, axis, shape.size(), "axis");
    m.outer = product(shape, 0, a);
    m.n = shape[a];
    m.inner = product(shape, a + 1, shape.size());
    m.out_shape = shape;
    m.out_shape[a] = m.k;
  }
  const std::string k_source = k_tensor ? ctx.describe_input("K") + " holds k, which"
                                        : std::string("attribute k");
  if (m.k != -1 && m.k < 1)
    ctx.fail(k_source + " is " + std::to_string(m.k) + "; k must be 1 or more");
  if (m.k > 0 && m.n >= 0 && m.k > m.n)
    ctx.fail(k_source + " is " + std::to_string(m.k) + ", more than the " + std::to_string(m.n) +
             " elements along the axis of " + ctx.describe_input("X") + " " +
             shape_to_string(shape));
  return m;
}

TopKMeta top_k_grad(const OpContext& ctx, TensorMeta x, TensorMeta indices, TensorMeta dout) {
  require_int64(ctx, "Indices", indices);
  if (!compatible(indices.shape, dout.shape))
    ctx.fail(ctx.describe_input("Out@GRAD") + " has shape " + shape_to_string(dout.shape) +
             ", expected the shape of " + ctx.describe_input("Indices") + " " +
             shape_to_string(indices.shape));
  if (indices.shape.size() != x.shape.size())
    ctx.fail(ctx.describe_input("Indices") + " " + shape_to_string(indices.shape) +
             " does not have the rank of " + ctx.describe_input("X") + " " +
             shape_to_string(x.shape));
  // The k of the forward op is the Indices' axis dim.
  const int64_t axis = ctx.int_attr("axis", -1);
  int64_t k = 1;
  if (!x.shape.empty()) k = indices.shape[normalize_axis(ctx, axis, x.shape.size(), "axis")];
  TopKMeta m = top_k(ctx, x, k < 0 ? std::nullopt : std::optional<int64_t>(k));
  if (k < 0) m.k = -1;
  if (!compatible(indices.shape, m.out_shape))
    ctx.fail(ctx.describe_input("Indices") + " has shape " + shape_to_string(indices.shape) +
             ", expected " + shape_to_string(m.out_shape) + " for " + ctx.describe_input("X") +
             " " + shape_to_string(x.shape));
  return m;
}

AccuracyMeta accuracy(const OpContext& ctx, TensorMeta out, TensorMeta indices, TensorMeta label) {
  if (out.shape.size() != 2)
    ctx.fail(ctx.describe_input("Out") + " has shape " + shape_to_string(out.shape) +
             "; it must be [samples, k] (the top-k values)");
  require_int64(ctx, "Indices", indices);
  if (!compatible(indices.shape, out.shape))
    ctx.fail(ctx.describe_input("Indices") + " has shape " + shape_to_string(indices.shape) +
             ", expected the shape of " + ctx.describe_input("Out") + " " +
             shape_to_string(out.shape));
  if (label.dtype != DataType::INT64 && label.dtype != DataType::INT32)
    ctx.fail(ctx.describe_input("Label") + " has dtype " + dtype_name(label.dtype) +
             "; labels are INT64 or INT32");
  if (label.shape.size() != 2 || (label.shape[1] != 1 && label.shape[1] != -1))
    ctx.fail(ctx.describe_input("Label") + " has shape " + shape_to_string(label.shape) +
             "; it must be [samples, 1]");
  AccuracyMeta m;
  m.rows = merge_dim(ctx, out.shape[0], label.shape[0],
                     "samples of " + ctx.describe_input("Out") + " and " +
                         ctx.describe_input("Label"));
  m.k = out.shape[1];
  return m;
}

int64_t accuracy_label(const OpContext& ctx, int64_t row, int64_t label) {
  if (label < 0)
    ctx.fail("Label " + std::to_string(label) + " at row " + std::to_string(row) + " is negative");
  return label;
}

}  // namespace ctp::meta
