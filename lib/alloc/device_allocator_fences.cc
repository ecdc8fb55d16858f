// DeviceAllocator, the fences (device_allocator.h): what a freed block
// waits for before anyone but its stream may have it (Notes [Held ranges
// reach everyone] and [Waiting instead of mapping]), kept apart from the
// allocating and freeing paths in device_allocator.cc; the events that
// fence each stream's held ranges are HeldFences' (held_fences.h). Every
// function here runs under the allocator's mutex.
#include <algorithm>
#include <thread>

#include "alloc/device_allocator.h"
#include "base/clock.h"
#include "cuda/runtime_api.h"

namespace gpuslack {
namespace alloc {

void DeviceAllocator::fence_all(bool with_held) {
  drain_fronts(std::nullopt);  // Note [Front caches]: the fences take over
  epochs_.close();
  std::vector<cudaStream_t> streams = streams_.streams();
  // Large blocks cached by size join their stream's held ranges: the stream
  // keeps reusing them, and settle_held() fences them for everyone else.
  if (!with_held)
    for (cudaStream_t s : streams) hold_cached_large(s);
  if (with_held)
    for (int i = 0; i < reservations_made_; ++i)
      for (Reservation::Owner o : reservations_[i].load(std::memory_order_relaxed)->owners())
        if (std::find(streams.begin(), streams.end(), stream_of(o)) == streams.end()) streams.push_back(stream_of(o));
  for (cudaStream_t s : streams) fence_stream(s, with_held);
}

// Note [Held ranges reach everyone].
void DeviceAllocator::release_fenced(cudaStream_t s) {
  for (int r = 0; r < reservations_made_; ++r)
    reservations_[r].load(std::memory_order_relaxed)->release_fenced(owner_of(s));
}

// Note [Others' fenced ranges before new space] in held_fences.h.
void DeviceAllocator::take_others_fenced(std::optional<cudaStream_t> stream, bool sparing) {
  held_fences_.poll_others(stream, sparing, [&](cudaStream_t s) { release_fenced(s); });
}

void DeviceAllocator::fence_held_on(cudaStream_t s) {
  if (!held_fences_.record(s)) return;
  for (int r = 0; r < reservations_made_; ++r)
    reservations_[r].load(std::memory_order_relaxed)->fence_held(owner_of(s));
}

void DeviceAllocator::settle_held() {
  held_fences_.poll_all([&](cudaStream_t s) { release_fenced(s); });
  std::vector<Reservation::Owner> owners;
  for (int r = 0; r < reservations_made_; ++r)
    for (Reservation::Owner o : reservations_[r].load(std::memory_order_relaxed)->owners())
      if (std::find(owners.begin(), owners.end(), o) == owners.end()) owners.push_back(o);
  for (Reservation::Owner o : owners)
    if (!held_fences_.pending(stream_of(o))) fence_held_on(stream_of(o));
}

void DeviceAllocator::hold_cached_large(cudaStream_t stream, bool on_allocation) {
  uint64_t bytes = 0;
  // See Note [The large cached path, cheaply]: on the allocation path the
  // large blocks the threads' fronts cached for `stream` join straight
  // from the fronts, not through freed_ and StreamCache.
  if (on_allocation && !fronts_.empty()) {
    to_hold_from_fronts_.clear();
    fronts_.drain(stream, BlockManager::kSmallLimit, &to_hold_from_fronts_);
    for (const FrontCache::Drained& d : to_hold_from_fronts_) {
      bytes += d.size;
      reservation_of(d.addr)->release_to(d.addr, owner_of(stream));
    }
  }
  to_hold_.clear();
  if (streams_.bytes_of(stream)) streams_.take_large(stream, &to_hold_);  // none cached: nothing to take
  for (uint64_t addr : to_hold_) {
    auto it = freed_.find(addr);
    bytes += it->second;
    freed_bytes_ -= it->second;
    freed_.erase(it);
    reservation_of(addr)->release_to(addr, owner_of(stream));  // merged with its held neighbours
  }
  if (!bytes) return;
  if (!on_allocation) {
    freed_to_held(stream, bytes);
    return;
  }
  // See Note [Fences off the allocation path]: a fence due here is recorded
  // now only within the allocations' budget; else by the stream's next
  // large free (free()), or its next miss, which fences every holder. As in
  // freed_to_held, bytes count toward a fence only while the stream holds
  // enough to need one: blocks the allocation is about to take back at once
  // must not make a fence due that freed_to_held would then never record.
  if (held_by_stream(stream) < kHeldFenceBytes) return;
  if (held_fences_.add_unfenced(stream, bytes) && held_fences_.allocation_may_fence()) freed_to_held(stream, 0);
}

uint64_t DeviceAllocator::held_by_stream(cudaStream_t s) const {
  uint64_t held = 0;
  for (int i = 0; i < reservations_made_; ++i)
    held += reservations_[i].load(std::memory_order_relaxed)->held_by(owner_of(s));
  return held;
}

void DeviceAllocator::freed_to_held(cudaStream_t s, uint64_t size) {  // size 0: a fence already due
  // A stream holding little needs no fence: a cached pair never records one.
  if (held_by_stream(s) < kHeldFenceBytes) return;
  if (!held_fences_.add_unfenced(s, size)) return;
  // One fence per stream: a pending one is replaced by a fence over all the
  // stream holds now (in stream order, it completes after the old one).
  if (held_fences_.poll(s, [&](cudaStream_t done) { release_fenced(done); })) held_fences_.drop(s);
  fence_held_on(s);
}

void DeviceAllocator::drop_held_fence(cudaStream_t stream) {
  if (held_fences_.drop(stream)) held_fences_.forget_unfenced(stream);
}

void DeviceAllocator::fence_stream(cudaStream_t stream, bool with_held) {
  std::vector<uint64_t> blocks;
  streams_.flush(stream, &blocks);
  if (with_held) {
    drop_held_fence(stream);  // what it marked is fenced again below
    // Held ranges become live blocks, freed: fenced and released like any.
    size_t first = blocks.size();
    for (int i = 0; i < reservations_made_; ++i)
      reservations_[i].load(std::memory_order_relaxed)->unhold(owner_of(stream), &blocks);
    held_fences_.forget_unfenced(stream);  // it holds nothing now: no fence is due
    for (size_t i = first; i < blocks.size(); ++i) {
      uint64_t size = reservation_of(blocks[i])->size_of(blocks[i]);
      freed_.emplace(blocks[i], size);
      freed_bytes_ += size;
    }
  }
  epochs_.close_on(std::move(blocks), {stream}, false);
}

uint64_t DeviceAllocator::cached_on_streams() const {
  uint64_t n = streams_.bytes();
  for_each_reservation([&](const Reservation& r) { n += r.held(); });
  return n;
}

// Note [Waiting instead of mapping].
void* DeviceAllocator::wait_then_allocate(uint64_t bytes) {
  uint64_t size = BlockManager::round_up(bytes);
  if (!policy_.knows_map_cost() || !epochs_.any_closed() || freed_bytes_ < size) return nullptr;
  const double start = clock::monotonic_seconds();
  const double deadline = start + policy_.fence_wait(size);
  void* p = nullptr;
  std::vector<uint64_t> ready;
  while (true) {
    epochs_.poll(&ready);
    if (!ready.empty()) {
      release(ready);
      ready.clear();
      if ((p = allocate_mapped(bytes))) break;
    }
    if (!epochs_.any_closed() || clock::monotonic_seconds() >= deadline) break;
    std::this_thread::yield();
  }
  stats_.fence_waited(clock::monotonic_seconds() - start, p != nullptr);
  return p;
}

}  // namespace alloc
}  // namespace gpuslack
