// DeviceAllocator, the front caches (Note [Front caches] in
// device_allocator.h): what moves blocks between the threads' fronts
// (FrontCaches, front_caches.h) and the allocator's books, kept apart from
// the allocating and freeing paths in device_allocator.cc.
//
// Lock order: mu_ before any front's lock; the cached pair takes its
// front's lock alone.
#include <algorithm>

#include "alloc/device_allocator.h"
#include "sync/stream_registry.h"

namespace gpuslack {
namespace alloc {

void DeviceAllocator::forget_thread_fronts_after_fork() { FrontCaches::forget_thread_after_fork(); }

void DeviceAllocator::front_thread_exited(void* owner, FrontCaches::Front* f) {
  static_cast<DeviceAllocator*>(owner)->retire_front(f);
}

void DeviceAllocator::retire_front(FrontCaches::Front* f) {
  std::lock_guard<AllocatorMutex> lock(mu_);
  settle_fronts();
  std::vector<FrontCache::Drained> cached;
  std::vector<FrontCache::Record> live;
  FrontCache::Counts counts;
  fronts_.retire(f, &cached, &live, &counts);
  stats_.front_counts(counts.allocations, counts.frees);
  // Live blocks stay live, the allocator's alone (any thread may free them).
  for (const FrontCache::Record& r : live) reservation_of(r.addr)->set_requested(r.addr, r.requested);
  drained_to_streams(cached);
  note_peaks();
}

// ------------------------------------------------------- the cached pair ---

void* DeviceAllocator::take_front(size_t bytes, cudaStream_t stream) {
  // During a capture the graph may be launched on another stream, unordered
  // with what `stream` still runs: no reuse (Note [Frees during capture]).
  if (sync::capturing()) return nullptr;
  std::optional<uint64_t> a = fronts_.take(stream, BlockManager::round_up(bytes), bytes);
  return a ? reinterpret_cast<void*>(*a) : nullptr;
}

int DeviceAllocator::put_front(void* p, cudaStream_t stream) {
  if (sync::capturing()) return -1;  // a free during a capture is deferred
  FrontCaches::Front* over = nullptr;
  FrontCache::Put put = fronts_.put(reinterpret_cast<uintptr_t>(p), stream, &over);
  if (put == FrontCache::Put::kNoRecord) return -1;
  if (put == FrontCache::Put::kFreedAlready) return 0;  // a double free, refused
  if (over) spill(over);
  return 1;
}

// ------------------------------------------ between the fronts and the rest ---

bool DeviceAllocator::adopt_front(cudaStream_t stream, uint64_t addr, uint64_t size) {
  // With a cache limit, every cached byte stays where the limit sees it.
  if (cache_limit_) return false;
  // A large block only while what the stream caches and holds stays below
  // kHeldFenceBytes, where its frees record no fence (Note [Held ranges
  // reach everyone]); past it, StreamCache and the held ranges, as before.
  uint64_t held = 0;
  if (size > BlockManager::kSmallLimit) {
    held = streams_.bytes_of(stream) + size;
    for (int i = 0; i < reservations_made_; ++i)
      held += reservations_[i].load(std::memory_order_relaxed)->held_by(owner_of(stream));
    if (held >= kHeldFenceBytes) return false;
  }
  // ... counting what the thread's front caches already.
  if (!fronts_.adopt(stream, addr, size, held ? kHeldFenceBytes - held : UINT64_MAX)) return false;
  // In the books, a block with a front record is live (take_freed marked it
  // freed).
  freed_.erase(addr);
  freed_bytes_ -= size;
  return true;
}

bool DeviceAllocator::front_record(uint64_t addr, bool* cached, uint64_t* requested) const {
  FrontCache::Record r;
  if (!fronts_.find(addr, &r)) return false;
  *cached = r.cached;
  if (requested && !r.cached) *requested = r.requested;
  return true;
}

bool DeviceAllocator::detach_front(uint64_t addr) {
  uint64_t requested = 0;
  switch (fronts_.detach(addr, &requested)) {
    case FrontCaches::Detach::kNoRecord:
      return true;
    case FrontCaches::Detach::kCached:
      return false;  // freed
    case FrontCaches::Detach::kDetached:
      break;
  }
  reservation_of(addr)->set_requested(addr, requested);  // what range checks allow
  return true;
}

void DeviceAllocator::drained_to_streams(const std::vector<FrontCache::Drained>& blocks) {
  for (const FrontCache::Drained& d : blocks) {
    freed_.emplace(d.addr, d.size);
    freed_bytes_ += d.size;
    streams_.put(d.stream, d.addr, d.size);
  }
}

void DeviceAllocator::drain_fronts(std::optional<cudaStream_t> stream) {
  if (fronts_.empty()) return;
  std::vector<FrontCache::Drained> blocks;
  fronts_.drain(stream, std::nullopt, &blocks);
  drained_to_streams(blocks);
}

void DeviceAllocator::spill(FrontCaches::Front* f) {
  std::lock_guard<AllocatorMutex> lock(mu_);
  settle_fronts();
  std::vector<FrontCache::Drained> blocks;
  fronts_.drain(f, &blocks);
  // To StreamCache, under the limits free() applies there, unless a
  // capture began meanwhile (no event then).
  const bool capture = sync::capturing();
  for (const FrontCache::Drained& d : blocks) {
    freed_.emplace(d.addr, d.size);
    freed_bytes_ += d.size;
    size_t cached = streams_.put(d.stream, d.addr, d.size);
    if (capture) continue;
    if (cached > kStreamCacheBlocks)
      fence_stream(d.stream, false);
    else if (d.size > BlockManager::kSmallLimit && streams_.bytes_of(d.stream) >= kHeldFenceBytes)
      hold_cached_large(d.stream);
  }
  note_peaks();
}

DeviceAllocator::FrontTotals DeviceAllocator::front_totals(bool settle) {
  FrontCaches::Totals t = fronts_.totals(settle);
  if (settle) stats_.front_counts(t.counts.allocations, t.counts.frees);
  return {t.cached_bytes, t.cached_blocks, t.low_water};
}

}  // namespace alloc
}  // namespace gpuslack
