#include "executor/runtime/memory_stats.h"

#include <array>
#include <atomic>

namespace ctp {
namespace {

struct Counters {
  std::atomic<int64_t> current{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> made{0};
};

Counters& counters(DeviceKind kind) {
  static std::array<Counters, kDeviceKindCount> table;
  return table[static_cast<std::size_t>(kind)];
}

}  // namespace

MemoryStats memory_stats(DeviceKind kind) {
  const Counters& c = counters(kind);
  return {c.current.load(), c.peak.load(), c.made.load()};
}

void reset_peak_memory(DeviceKind kind) {
  Counters& c = counters(kind);
  c.peak.store(c.current.load());
}

void note_buffer_made(DeviceKind kind, std::size_t bytes) {
  Counters& c = counters(kind);
  const int64_t now = c.current.fetch_add(static_cast<int64_t>(bytes)) + static_cast<int64_t>(bytes);
  int64_t peak = c.peak.load();
  while (now > peak && !c.peak.compare_exchange_weak(peak, now)) {
  }
  c.made.fetch_add(1);
}

void note_buffer_freed(DeviceKind kind, std::size_t bytes) {
  counters(kind).current.fetch_sub(static_cast<int64_t>(bytes));
}

}  // namespace ctp
