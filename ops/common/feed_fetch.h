// What the CPU and CUDA feed and fetch kernels share: the run's feed/fetch
// lists and the column an op's `col` attribute names in them.
#pragma once
#include <cstddef>

#include "executor/runtime/kernel.h"

namespace ctp {

// The run's lists; fails when the run has none.
FeedFetchLists& feed_fetch_lists(KernelContext& ctx);
// The op's `col`: not negative, and below the block's op count (which keeps
// the fetch list, grown to the largest column, as small as the program).
std::size_t feed_fetch_column(KernelContext& ctx);
// The tensor fed at the feed op's column; fails naming the column and the
// var when nothing was.
const Tensor& fed_tensor(KernelContext& ctx);
// The fetch list's entry for the fetch op's column, the list grown to hold it.
Tensor& fetch_target(KernelContext& ctx);

}  // namespace ctp
