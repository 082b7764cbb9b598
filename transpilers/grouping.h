// Cutting a sequence into groups to fuse, written once for the rewrites that
// fuse gradients (XLA's CombineInstructionsByKey is the model): consecutive
// items of one key share a group until the group's weight reaches a bound.
// GradAllReduce's buckets weigh gradients in bytes; MultiThread's segments
// count them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ctp {

struct GroupItem {
  int64_t key = 0;     // items of different keys never share a group (e.g. the dtype)
  int64_t weight = 1;  // toward the bound (bytes, or 1 to count)
  // Whether a full group may end after this item (false keeps an op's
  // gradients together when the bound is checked once per op).
  bool may_end_group = true;
};

// [begin, end) indices into the items.
struct Group {
  std::size_t begin = 0;
  std::size_t end = 0;
};

// Items in order; an item whose key differs from the open group's starts a new
// group; a group ends after an item that may end one once its total weight is
// at least `bound`.
std::vector<Group> group_by_key(const std::vector<GroupItem>& items, int64_t bound);

}  // namespace ctp
