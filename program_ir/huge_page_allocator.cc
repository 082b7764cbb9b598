#include "program_ir/huge_page_allocator.h"

#include <sys/mman.h>

#include <cstdlib>

namespace ctp::huge_pages {

void* allocate(std::size_t bytes) {
  if (bytes < kSize) {
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (!p) throw std::bad_alloc();
    return p;
  }
  const std::size_t rounded = (bytes + kSize - 1) / kSize * kSize;
  void* p = std::aligned_alloc(kSize, rounded);
  if (!p) throw std::bad_alloc();
  // A hint: without it (or where the kernel refuses) the pages are small.
  (void)::madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}

void release(void* p, std::size_t) noexcept { std::free(p); }

}  // namespace ctp::huge_pages
