#include "ops/schema/meta_collective.h"

#include <string>

namespace ctp::meta {

Shape c_allgather(const OpContext& ctx, TensorMeta x, int64_t nranks) {
  if (nranks < 1) ctx.fail("nranks is " + std::to_string(nranks) + ", must be >= 1");
  if (x.shape.empty()) return Shape{nranks};
  Shape out = x.shape;
  out[0] = out[0] < 0 ? -1 : out[0] * nranks;
  return out;
}

}  // namespace ctp::meta
