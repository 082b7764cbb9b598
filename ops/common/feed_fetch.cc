#include "ops/common/feed_fetch.h"

#include <string>

namespace ctp {

FeedFetchLists& feed_fetch_lists(KernelContext& ctx) {
  if (!ctx.services().feed_fetch)
    ctx.fail("the run has no feed/fetch lists (pass feeds to Executor::run)");
  return *ctx.services().feed_fetch;
}

std::size_t feed_fetch_column(KernelContext& ctx) {
  const int64_t col = ctx.int_attr("col", 0);
  if (col < 0) ctx.fail("col " + std::to_string(col) + " is negative");
  if (static_cast<uint64_t>(col) >= ctx.block().op_count())
    ctx.fail("col " + std::to_string(col) + " is not below the block's " +
             std::to_string(ctx.block().op_count()) + " ops");
  return static_cast<std::size_t>(col);
}

const Tensor& fed_tensor(KernelContext& ctx) {
  const std::size_t col = feed_fetch_column(ctx);
  const std::vector<Tensor>& feeds = feed_fetch_lists(ctx).feed;
  if (col >= feeds.size() || !feeds[col].initialized())
    ctx.fail("nothing was fed at col " + std::to_string(col) + " (for '" +
             ctx.output_names("Out").at(0) + "'); " + std::to_string(feeds.size()) +
             " tensor(s) were fed");
  return feeds[col];
}

Tensor& fetch_target(KernelContext& ctx) {
  const std::size_t col = feed_fetch_column(ctx);
  std::vector<Tensor>& fetched = feed_fetch_lists(ctx).fetch;
  if (fetched.size() <= col) fetched.resize(col + 1);
  return fetched[col];
}

}  // namespace ctp
