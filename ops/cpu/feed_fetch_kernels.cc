// feed and fetch: Paddle's way of binding a program's inputs and outputs.
// They read and write the caller's FeedFetchLists by their `col` attribute.
#include "ops/common/feed_fetch.h"
#include "ops/cpu/cpu_kernel_util.h"

namespace ctp::cpu {
namespace {

void feed(KernelContext& ctx) {
  // Shares the caller's buffer, as Paddle's feed does: no copy per step.
  ctx.output("Out") = fed_tensor(ctx);
}

void fetch(KernelContext& ctx) {
  Tensor& target = fetch_target(ctx);
  // A copy: the var's buffer is overwritten by the next step.
  const Tensor& x = ctx.input("X");
  Tensor copy(x.dtype(), x.shape());
  copy_tensor(x, copy);
  target = std::move(copy);
}

}  // namespace

CTP_REGISTER_KERNEL(feed, CPU, feed);
CTP_REGISTER_KERNEL(fetch, CPU, fetch);

}  // namespace ctp::cpu
