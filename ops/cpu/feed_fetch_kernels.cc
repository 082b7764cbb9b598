// feed and fetch: Paddle's way of binding a program's inputs and outputs.
// They read and write the caller's FeedFetchLists by their `col` attribute.
#include "ops/cpu/cpu_kernel_util.h"

namespace ctp::cpu {
namespace {

FeedFetchLists& lists(KernelContext& ctx) {
  if (!ctx.services().feed_fetch)
    throw Error(ctx.where() + "the run has no feed/fetch lists (pass feeds to Executor::run)");
  return *ctx.services().feed_fetch;
}

std::size_t column(KernelContext& ctx) {
  const int64_t col = ctx.attr_int("col", 0);
  if (col < 0) throw Error(ctx.where() + "col " + std::to_string(col) + " is negative");
  return static_cast<std::size_t>(col);
}

void feed(KernelContext& ctx) {
  const std::size_t col = column(ctx);
  std::vector<Tensor>& feeds = lists(ctx).feed;
  if (col >= feeds.size() || !feeds[col].initialized())
    throw Error(ctx.where() + "nothing was fed at col " + std::to_string(col) + " (for '" +
                ctx.output_names("Out").at(0) + "'); " + std::to_string(feeds.size()) +
                " tensor(s) were fed");
  // Shares the caller's buffer, as Paddle's feed does: no copy per step.
  ctx.output("Out") = feeds[col];
}

void fetch(KernelContext& ctx) {
  const std::size_t col = column(ctx);
  std::vector<Tensor>& fetched = lists(ctx).fetch;
  if (fetched.size() <= col) fetched.resize(col + 1);
  // A copy: the var's buffer is overwritten by the next step.
  const Tensor& x = ctx.input("X");
  Tensor copy(x.dtype(), x.shape());
  copy_tensor(x, copy);
  fetched[col] = std::move(copy);
}

}  // namespace

CTP_REGISTER_KERNEL(feed, CPU, feed);
CTP_REGISTER_KERNEL(fetch, CPU, fetch);

}  // namespace ctp::cpu
