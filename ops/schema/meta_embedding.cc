#include "ops/schema/meta_embedding.h"

#include "ops/schema/shape_rules.h"

namespace ctp::meta {

LookupMeta lookup_table_v2(const OpContext& ctx, TensorMeta w, TensorMeta ids) {
  if (w.shape.size() != 2)
    ctx.fail(ctx.describe_input("W") + " " + shape_to_string(w.shape) +
             " must have rank 2 ([rows, width])");
  if (ids.dtype != DataType::INT64 && ids.dtype != DataType::INT32)
    ctx.fail(ctx.describe_input("Ids") + " has dtype " + std::string(to_string(ids.dtype)) +
             "; ids are INT64 or INT32");
  LookupMeta m;
  m.rows = w.shape[0];
  m.width = w.shape[1];
  m.ids = product(ids.shape);
  m.padding_idx = ctx.int_attr("padding_idx");
  m.out_shape = ids.shape;
  m.out_shape.push_back(m.width);
  return m;
}

LookupMeta lookup_table_v2_grad(const OpContext& ctx, TensorMeta w, TensorMeta ids,
                                TensorMeta dout) {
  LookupMeta m = lookup_table_v2(ctx, w, ids);
  if (!compatible(dout.shape, m.out_shape) || dout.dtype != w.dtype)
    ctx.fail(ctx.describe_input("Out@GRAD") + " " + shape_to_string(dout.shape) + " " +
             std::string(to_string(dout.dtype)) + " does not match the forward Out " +
             shape_to_string(m.out_shape) + " " + std::string(to_string(w.dtype)));
  return m;
}

int64_t lookup_row(const OpContext& ctx, const LookupMeta& m, int64_t position, int64_t id) {
  if (m.padding_idx != -1 && id == m.padding_idx) return -1;
  if (id < 0 || id >= m.rows)
    ctx.fail("Ids " + std::to_string(id) + " at position " + std::to_string(position) +
             " is outside [0, " + std::to_string(m.rows) + ")");
  return id;
}

}  // namespace ctp::meta
