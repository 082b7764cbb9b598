// The rules of lookup_table_v2 (Paddle's embedding) and its gradient,
// written once for the schema's inference (ops/schema/defs_nlp.cc) and the
// CPU and CUDA kernels; see meta_math.h.
#pragma once
#include <cstdint>

#include "ops/schema/op_context.h"

namespace ctp::meta {

// lookup_table_v2: W is [rows, width]; Ids (INT64 or INT32, any shape) pick
// rows of W; Out is Ids' shape + [width] of W's dtype. An id equal to
// padding_idx (unless it is -1, "none") gives a row of zeros.
struct LookupMeta {
  int64_t rows, width;  // -1 where unknown
  int64_t ids;          // elements of Ids
  int64_t padding_idx;  // -1: none
  Shape out_shape;
};
LookupMeta lookup_table_v2(const OpContext& ctx, TensorMeta w, TensorMeta ids);
// lookup_table_v2_grad: the forward rules; Out@GRAD has Out's shape and W's
// dtype. W@GRAD is dense, W's shape: each id's row of Out@GRAD added to its
// row (none for padding_idx).
LookupMeta lookup_table_v2_grad(const OpContext& ctx, TensorMeta w, TensorMeta ids,
                                TensorMeta dout);
// The row of W that the id at Ids' element `position` picks, -1 for
// padding_idx; fails when the id is outside [0, rows). (The kernels check
// ids as they read them.)
int64_t lookup_row(const OpContext& ctx, const LookupMeta& m, int64_t position, int64_t id);

}  // namespace ctp::meta
