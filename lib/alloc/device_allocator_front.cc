// DeviceAllocator, the front caches (Note [Front caches] in
// device_allocator.h): each thread's cached pair without the allocator's
// lock, and what moves blocks between the fronts and the rest, kept apart
// from the allocating and freeing paths in device_allocator.cc.
//
// A thread finds its front for an allocator by the allocator's serial (a
// number never reused, so a front of a destroyed allocator is never taken
// for a new one at the same address): the last one used in a trivially
// destructible thread_local, the others in the thread's list. A pthread
// key's destructor hands the thread's fronts back when it exits (as
// ledger/shard_pool.h does: glibc runs it after the C++ thread_local
// destructors, which may still allocate); a front is shared (shared_ptr)
// by its thread and its allocator, whichever goes last frees it.
//
// Lock order: mu_ before any front's lock; the cached pair takes its
// front's lock alone.
#include <pthread.h>

#include <algorithm>

#include "alloc/device_allocator.h"
#include "sync/stream_registry.h"

namespace gpuslack {
namespace alloc {

struct DeviceAllocator::ThreadFronts {
  struct Entry {
    uint64_t serial;
    std::shared_ptr<Front> front;
  };
  std::vector<Entry> entries;
};

namespace {

struct LastFront {
  uint64_t serial;  // 0: none
  void* front;
};
thread_local LastFront t_last{0, nullptr};
thread_local void* t_fronts = nullptr;  // DeviceAllocator::ThreadFronts*, made by the first front

// The key whose destructor hands a thread's fronts back, once made (by
// make_my_front(), before any thread has a ThreadFronts).
pthread_key_t g_fronts_key;

}  // namespace

void DeviceAllocator::forget_thread_fronts_after_fork() {
  t_last = {0, nullptr};
  if (!t_fronts) return;
  // Made after the key (g_fronts_key is set). The parent's ThreadFronts is
  // left behind unread, and the key's destructor no longer finds it.
  t_fronts = nullptr;
  pthread_setspecific(g_fronts_key, nullptr);
}

DeviceAllocator::Front* DeviceAllocator::my_front() const {
  if (t_last.serial == serial_) return static_cast<Front*>(t_last.front);
  auto* fronts = static_cast<ThreadFronts*>(t_fronts);
  if (!fronts) return nullptr;
  for (const ThreadFronts::Entry& e : fronts->entries)
    if (e.serial == serial_) {
      t_last = {serial_, e.front.get()};
      return e.front.get();
    }
  return nullptr;
}

DeviceAllocator::Front* DeviceAllocator::make_my_front() {
  if (Front* f = my_front()) return f;
  static pthread_key_t key = [] {
    pthread_key_t k;
    if (pthread_key_create(&k, &DeviceAllocator::thread_exited) != 0) k = static_cast<pthread_key_t>(-1);
    g_fronts_key = k;
    return k;
  }();
  if (key == static_cast<pthread_key_t>(-1)) return nullptr;  // no fronts, no harm: StreamCache serves
  auto* fronts = static_cast<ThreadFronts*>(t_fronts);
  if (!fronts) {
    fronts = new ThreadFronts();
    t_fronts = fronts;
  }
  pthread_setspecific(key, fronts);  // (again, when set to NULL before a second round of destructors)
  // Fronts of allocators destroyed since go (their serials never come back).
  fronts->entries.erase(std::remove_if(fronts->entries.begin(), fronts->entries.end(),
                                       [](const ThreadFronts::Entry& e) {
                                         std::lock_guard<FrontLock> lock(e.front->lock);
                                         return e.front->owner == nullptr;
                                       }),
                        fronts->entries.end());
  // A front caches less than kHeldFenceBytes: a stream's large frees past
  // that are fenced for everyone at once (Note [Held ranges reach
  // everyone]), from StreamCache, as without fronts.
  auto f = std::make_shared<Front>(FrontCache::Limits{64, kHeldFenceBytes - 1, 1024});
  f->owner = this;
  fronts_.push_back(f);
  fronts->entries.push_back({serial_, f});
  t_last = {serial_, f.get()};
  return f.get();
}

void DeviceAllocator::thread_exited(void* p) {
  auto* fronts = static_cast<ThreadFronts*>(p);
  t_last = {0, nullptr};
  t_fronts = nullptr;
  for (ThreadFronts::Entry& e : fronts->entries) {
    DeviceAllocator* owner;
    {
      std::lock_guard<FrontLock> lock(e.front->lock);
      owner = e.front->owner;
    }
    if (owner) owner->front_thread_exited(e.front.get());
  }
  delete fronts;
}

void DeviceAllocator::front_thread_exited(Front* f) {
  std::lock_guard<AllocatorMutex> lock(mu_);
  settle_fronts();
  std::vector<FrontCache::Drained> cached;
  std::vector<FrontCache::Record> live;
  {
    std::lock_guard<FrontLock> front_lock(f->lock);
    f->cache.detach_all(&cached, &live);
    FrontCache::Counts counts = f->cache.take_counts();
    stats_.front_counts(counts.allocations, counts.frees);
    f->owner = nullptr;
  }
  // Live blocks stay live, the allocator's alone (any thread may free them).
  for (const FrontCache::Record& r : live) {
    front_of_.erase(r.addr);
    reservation_of(r.addr)->set_requested(r.addr, r.requested);
  }
  drained_to_streams(cached);
  fronts_.erase(std::remove_if(fronts_.begin(), fronts_.end(),
                               [f](const std::shared_ptr<Front>& x) { return x.get() == f; }),
                fronts_.end());
  note_peaks();
}

// ------------------------------------------------------- the cached pair ---

void* DeviceAllocator::take_front(size_t bytes, cudaStream_t stream) {
  Front* f = my_front();
  // During a capture the graph may be launched on another stream, unordered
  // with what `stream` still runs: no reuse (Note [Frees during capture]).
  if (!f || sync::capturing()) return nullptr;
  uint64_t size = BlockManager::round_up(bytes);
  f->lock.lock();
  std::optional<uint64_t> a = f->cache.take(stream, size, bytes);
  f->lock.unlock();
  return a ? reinterpret_cast<void*>(*a) : nullptr;
}

int DeviceAllocator::put_front(void* p, cudaStream_t stream) {
  Front* f = my_front();
  if (!f || sync::capturing()) return -1;  // a free during a capture is deferred
  f->lock.lock();
  FrontCache::Put put = f->cache.put(reinterpret_cast<uintptr_t>(p), stream);
  const bool over = put == FrontCache::Put::kCached && f->cache.over();
  f->lock.unlock();
  if (put == FrontCache::Put::kNoRecord) return -1;
  if (put == FrontCache::Put::kFreedAlready) return 0;  // a double free, refused
  if (over) spill(f);
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
  Front* f = make_my_front();
  if (!f) return false;
  {
    std::lock_guard<FrontLock> lock(f->lock);
    if (held && held + f->cache.cached_bytes() >= kHeldFenceBytes) return false;
    if (!f->cache.adopt(stream, addr, size)) return false;
  }
  // In the books, a block with a front record is live (take_freed marked it
  // freed).
  freed_.erase(addr);
  freed_bytes_ -= size;
  front_of_.emplace(addr, f);
  return true;
}

bool DeviceAllocator::front_record(uint64_t addr, bool* cached, uint64_t* requested) const {
  auto it = front_of_.find(addr);
  if (it == front_of_.end()) return false;
  std::optional<FrontCache::Record> r;
  {
    std::lock_guard<FrontLock> lock(it->second->lock);
    r = it->second->cache.find(addr);
  }
  if (!r) return false;  // cannot happen: records leave under mu_
  *cached = r->cached;
  if (requested && !r->cached) *requested = r->requested;
  return true;
}

bool DeviceAllocator::detach_front(uint64_t addr) {
  auto it = front_of_.find(addr);
  if (it == front_of_.end()) return true;
  FrontCache::Record r;
  {
    std::lock_guard<FrontLock> lock(it->second->lock);
    if (!it->second->cache.detach(addr, &r)) return false;  // cached: freed
  }
  front_of_.erase(it);
  reservation_of(addr)->set_requested(addr, r.requested);  // what range checks allow
  return true;
}

void DeviceAllocator::drained_to_streams(const std::vector<FrontCache::Drained>& blocks) {
  for (const FrontCache::Drained& d : blocks) {
    front_of_.erase(d.addr);
    freed_.emplace(d.addr, d.size);
    freed_bytes_ += d.size;
    streams_.put(d.stream, d.addr, d.size);
  }
}

void DeviceAllocator::drain_fronts(std::optional<cudaStream_t> stream, bool large_only) {
  if (front_of_.empty()) return;
  std::vector<FrontCache::Drained> blocks;
  for (const std::shared_ptr<Front>& f : fronts_) {
    std::lock_guard<FrontLock> lock(f->lock);
    if (!stream)
      f->cache.drain(&blocks);
    else
      f->cache.drain(*stream, large_only ? std::optional<uint64_t>(BlockManager::kSmallLimit) : std::nullopt, &blocks);
  }
  drained_to_streams(blocks);
}

void DeviceAllocator::spill(Front* f) {
  std::lock_guard<AllocatorMutex> lock(mu_);
  settle_fronts();
  std::vector<FrontCache::Drained> blocks;
  {
    std::lock_guard<FrontLock> front_lock(f->lock);
    f->cache.drain(&blocks);
  }
  // To StreamCache, under the limits free() applies there, unless a
  // capture began meanwhile (no event then).
  const bool capture = sync::capturing();
  for (const FrontCache::Drained& d : blocks) {
    front_of_.erase(d.addr);
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
  FrontTotals t;
  for (const std::shared_ptr<Front>& f : fronts_) {
    std::lock_guard<FrontLock> lock(f->lock);
    t.cached_bytes += f->cache.cached_bytes();
    t.cached_blocks += f->cache.cached_blocks();
    if (!settle) continue;
    t.low_water += f->cache.take_low_water();
    FrontCache::Counts counts = f->cache.take_counts();
    stats_.front_counts(counts.allocations, counts.frees);
  }
  return t;
}

}  // namespace alloc
}  // namespace gpuslack
