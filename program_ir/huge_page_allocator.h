// An allocator for large arrays read at random (hash indexes of a large
// program's names): an allocation of a huge page or more is aligned to huge
// pages and asks the kernel for them (MADV_HUGEPAGE; transparent huge pages
// are usually enabled "madvise"). Each lookup in an index of tens of MB
// missed the TLB as well as the cache, and on a virtual machine a TLB miss
// is a two-level page walk: on this project's VM, a 1M-op MultiThread
// all_gather spent 1.9 s in its var index's first load, 270 ns a probe
// (bench/RESULTS.md, session 21). Smaller allocations are plain ones. Where
// the kernel gives no huge pages, it is a plain aligned allocation.
#pragma once
#include <cstddef>
#include <new>

namespace ctp {

namespace huge_pages {
constexpr std::size_t kSize = std::size_t{2} << 20;
// Memory for `bytes`, huge-page aligned and advised when that is at least
// kSize; release with release(p, bytes).
void* allocate(std::size_t bytes);
void release(void* p, std::size_t bytes) noexcept;
}  // namespace huge_pages

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(huge_pages::allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { huge_pages::release(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

}  // namespace ctp
