#include "ops/common/activation_inputs.h"

#include <random>

#include "ops/common/kernel_util.h"

namespace ctp {

ClipBounds clip_bounds(const KernelContext& ctx, const Tensor* min_host, const Tensor* max_host) {
  ClipBounds b;
  b.min = min_host ? scalar_value(*min_host) : ctx.float_attr("min");
  b.max = max_host ? scalar_value(*max_host) : ctx.float_attr("max");
  meta::clip_bounds(ctx, b.min, b.max);
  return b;
}

uint64_t dropout_seed(const meta::DropoutMeta& rules, const Tensor* seed_host) {
  if (seed_host)  // INT32 or INT64, as the rules checked
    return seed_host->dtype() == DataType::INT64
               ? static_cast<uint64_t>(*seed_host->data<int64_t>())
               : static_cast<uint64_t>(static_cast<int64_t>(*seed_host->data<int32_t>()));
  if (rules.fix_seed) return static_cast<uint64_t>(rules.seed);
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

}  // namespace ctp
