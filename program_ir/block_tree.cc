#include "program_ir/block_tree.h"

#include <utility>

namespace ctp {
namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

std::size_t parent_of(const Program& program, std::size_t b) {
  const int32_t parent = program.blocks[b].parent_idx;
  const bool exists = parent >= 0 && static_cast<std::size_t>(parent) < program.blocks.size();
  return exists && static_cast<std::size_t>(parent) != b ? static_cast<std::size_t>(parent) : kNone;
}

}  // namespace

void walk_block_tree(const Program& program, const std::function<void(const BlockGroup&)>& enter,
                     const std::function<void(const BlockGroup&)>& leave) {
  const std::size_t n = program.blocks.size();
  // Group the blocks: a loop's blocks together, every other block alone. Each
  // walk up stops at a block already seen, so this is linear.
  std::vector<BlockGroup> groups;
  std::vector<std::size_t> group_of(n, kNone);
  enum State : char { Unvisited, OnPath, Done };
  std::vector<State> state(n, Unvisited);
  std::vector<std::size_t> path;
  for (std::size_t start = 0; start < n; ++start) {
    path.clear();
    std::size_t b = start;
    bool looped = false;
    while (true) {
      if (state[b] != Unvisited) {
        looped = state[b] == OnPath;
        break;
      }
      state[b] = OnPath;
      path.push_back(b);
      if (parent_of(program, b) == kNone) break;
      b = parent_of(program, b);
    }
    if (looped) {
      std::size_t first = 0;
      while (path[first] != b) ++first;
      groups.emplace_back(path.begin() + static_cast<std::ptrdiff_t>(first), path.end());
      for (std::size_t i = first; i < path.size(); ++i) group_of[path[i]] = groups.size() - 1;
    }
    for (std::size_t p : path) {
      state[p] = Done;
      if (group_of[p] == kNone) {
        groups.push_back({p});
        group_of[p] = groups.size() - 1;
      }
    }
  }

  // A lone block hangs under its parent's group; loops and parentless
  // blocks are the roots.
  std::vector<std::vector<std::size_t>> children(groups.size());
  std::vector<std::size_t> roots;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::size_t parent = groups[g].size() == 1 ? parent_of(program, groups[g][0]) : kNone;
    if (parent == kNone) roots.push_back(g);
    else children[group_of[parent]].push_back(g);
  }

  std::vector<std::pair<std::size_t, bool>> stack;  // group, leaving it
  for (auto it = roots.rbegin(); it != roots.rend(); ++it) stack.emplace_back(*it, false);
  while (!stack.empty()) {
    const auto [g, leaving] = stack.back();
    stack.pop_back();
    if (leaving) {
      leave(groups[g]);
      continue;
    }
    enter(groups[g]);
    stack.emplace_back(g, true);
    for (auto it = children[g].rbegin(); it != children[g].rend(); ++it)
      stack.emplace_back(*it, false);
  }
}

}  // namespace ctp
