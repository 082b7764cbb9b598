#include "transpilers/grouping.h"

namespace ctp {

std::vector<Group> group_by_key(const std::vector<GroupItem>& items, int64_t bound) {
  std::vector<Group> groups;
  bool open = false;
  int64_t weight = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (open && items[i].key != items[groups.back().begin].key) open = false;
    if (!open) {
      groups.push_back(Group{i, i});
      weight = 0;
      open = true;
    }
    groups.back().end = i + 1;
    weight += items[i].weight;
    if (items[i].may_end_group && weight >= bound) open = false;
  }
  return groups;
}

}  // namespace ctp
