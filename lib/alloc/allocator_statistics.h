// AllocatorStatistics: what a DeviceAllocator counts about itself, kept
// apart from its block bookkeeping (RMM's statistics_resource_adaptor, as a
// member rather than a wrapper): event counters, the allocated and
// reserved bytes with their peaks, and the Timeline of both.
//
// Not an adaptor around the allocator: cudaFree names no size, so a wrapper
// would have to look each block up again, and a virtual resource would put
// an indirect call on every allocation. The allocator instead reports what
// happened (allocated(), freed(), ...) and the current totals (note()),
// under its own mutex: inline, no lock, no virtual call; the hot path does
// what it did when the counters lived in the allocator.
//
// Thread safety: none; the owning allocator serializes every call.
#pragma once

#include <cstdint>

#include "alloc/device_stats.h"
#include "alloc/timeline.h"

namespace gpuslack {
namespace alloc {

class AllocatorStatistics {
 public:
  // Events, one call each.
  void allocated() { ++s_.allocations; }
  void reused_on_stream() { ++s_.stream_reuses; }
  void freed() { ++s_.frees; }
  // What front caches served and took (Note [Front caches]): every
  // allocation there reuses a block freed on its stream.
  void front_counts(uint64_t allocations, uint64_t frees) {
    s_.allocations += allocations;
    s_.stream_reuses += allocations;
    s_.frees += frees;
  }
  void deferred_free() { ++s_.deferred_frees; }
  void capture_fallback() { ++s_.capture_fallbacks; }
  void oom_retry() { ++s_.oom_retries; }
  void failed_allocation() { ++s_.failed_allocations; }
  void stalled(double seconds) { s_.stall_s += seconds; }
  void fence_waited(double seconds, bool served) {
    ++s_.fence_waits;
    s_.fence_waits_served += served;
    s_.fence_wait_s += seconds;
  }

  // The allocator's current totals: live blocks' bytes (pending frees
  // excluded) and mapped bytes. Peaks and the timeline follow them.
  void note(uint64_t allocated, uint64_t reserved) {
    s_.allocated = allocated;
    s_.reserved = reserved;
    if (allocated > s_.peak_allocated) s_.peak_allocated = allocated;
    if (reserved > s_.peak_reserved) s_.peak_reserved = reserved;
    timeline_.note(allocated, reserved);
  }
  // Restarts the peaks from the last noted values.
  void reset_peaks() {
    s_.peak_allocated = s_.allocated;
    s_.peak_reserved = s_.reserved;
  }

  // The counters, totals and peaks; the fields only the allocator knows
  // (pending_free, largest_free, granules, chunks, reservations, epochs)
  // are left for it to fill.
  const DeviceStats& counted() const { return s_; }
  Timeline::Samples timeline() const { return timeline_.samples(); }

 private:
  DeviceStats s_;
  Timeline timeline_;
};

}  // namespace alloc
}  // namespace gpuslack
