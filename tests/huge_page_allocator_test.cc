// The allocator of large indexes read at random (program_ir/
// huge_page_allocator.h): an array of a huge page or more lies on huge
// pages where the kernel gives them, so that a probe of a var index of tens
// of MB does not miss the TLB as well as the cache; a small one is a plain
// allocation.
#include <sys/mman.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "program_ir/huge_page_allocator.h"

namespace ctp {
namespace {

// The kB of huge pages backing the mapping that holds `p`
// (/proc/self/smaps' AnonHugePages), or -1 when it cannot be read.
long huge_page_kb_at(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t start = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> start >> dash >> end && dash == '-') {
      inside = start <= at && at < end;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0)
      return std::stol(line.substr(std::strlen("AnonHugePages:")));
  }
  return -1;
}

// Whether this kernel backs a region advised MADV_HUGEPAGE with huge pages
// now: a control, mapped here, for the allocator's own memory (with
// transparent huge pages off, or memory too fragmented, it gets none).
bool kernel_gives_huge_pages() {
  constexpr std::size_t kBytes = 3 * huge_pages::kSize;
  void* map = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return false;
  // A huge-page-aligned range inside the mapping.
  const auto aligned = (reinterpret_cast<std::uintptr_t>(map) + huge_pages::kSize - 1) /
                       huge_pages::kSize * huge_pages::kSize;
  char* region = reinterpret_cast<char*>(aligned);
  const bool advised = ::madvise(region, huge_pages::kSize, MADV_HUGEPAGE) == 0;
  if (advised) std::memset(region, 1, huge_pages::kSize);
  const bool gives = advised && huge_page_kb_at(region) > 0;
  ::munmap(map, kBytes);
  return gives;
}

TEST(HugePageAllocator, ALargeArrayLiesOnHugePages) {
  // 8 MiB of 32-bit entries, as a var index of two million slots.
  std::vector<uint32_t, HugePageAllocator<uint32_t>> index(std::size_t{2} << 20, 1);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(index.data()) % huge_pages::kSize, 0u);
  if (!kernel_gives_huge_pages())
    GTEST_SKIP() << "this kernel gives no transparent huge pages to an advised region now";
  EXPECT_GT(huge_page_kb_at(index.data()), 0) << "the array lies on small pages only";
  for (std::size_t i = 0; i < index.size(); i += 4096) EXPECT_EQ(index[i], 1u);
}

TEST(HugePageAllocator, ASmallArrayIsAPlainAllocation) {
  std::vector<uint32_t, HugePageAllocator<uint32_t>> small(1000, 7);
  small.push_back(8);
  EXPECT_EQ(small.size(), 1001u);
  EXPECT_EQ(small.front(), 7u);
  EXPECT_EQ(small.back(), 8u);
  // Grown past a huge page, it moves to huge-page-aligned memory, its
  // entries with it.
  small.resize(std::size_t{1} << 20, 9);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.data()) % huge_pages::kSize, 0u);
  EXPECT_EQ(small[1000], 8u);
  EXPECT_EQ(small.back(), 9u);
}

}  // namespace
}  // namespace ctp
