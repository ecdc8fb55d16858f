#include "alloc/front_caches.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <mutex>

namespace gpuslack {
namespace alloc {

struct FrontCaches::ThreadFronts {
  struct Entry {
    uint64_t serial;
    std::shared_ptr<Front> front;
  };
  std::vector<Entry> entries;
};

namespace {

uint64_t next_serial() {
  static std::atomic<uint64_t> serial{0};
  return serial.fetch_add(1, std::memory_order_relaxed) + 1;
}

thread_local void* t_fronts = nullptr;  // FrontCaches::ThreadFronts*, made by the first front

// The key whose destructor hands a thread's fronts back, once made (by
// make_mine(), before any thread has a ThreadFronts).
pthread_key_t g_fronts_key;

}  // namespace

FrontCaches::FrontCaches(FrontCache::Limits limits, ThreadExited exited, void* owner)
    : serial_(next_serial()), limits_(limits), exited_(exited), owner_(owner) {}

void FrontCaches::orphan() {
  for (const std::shared_ptr<Front>& f : fronts_) {  // the threads' fronts outlive it
    std::lock_guard<FrontLock> lock(f->lock);
    f->owner = nullptr;
  }
}

void FrontCaches::forget_thread_after_fork() {
  t_last_ = {0, nullptr};
  if (!t_fronts) return;
  // Made after the key (g_fronts_key is set). The parent's ThreadFronts is
  // left behind unread, and the key's destructor no longer finds it.
  t_fronts = nullptr;
  pthread_setspecific(g_fronts_key, nullptr);
}

FrontCaches::Front* FrontCaches::mine_listed() const {
  auto* fronts = static_cast<ThreadFronts*>(t_fronts);
  if (!fronts) return nullptr;
  for (const ThreadFronts::Entry& e : fronts->entries)
    if (e.serial == serial_) {
      t_last_ = {serial_, e.front.get()};
      return e.front.get();
    }
  return nullptr;
}

FrontCaches::Front* FrontCaches::make_mine() {
  if (Front* f = mine()) return f;
  static pthread_key_t key = [] {
    pthread_key_t k;
    if (pthread_key_create(&k, &FrontCaches::thread_exited) != 0) k = static_cast<pthread_key_t>(-1);
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
  auto f = std::make_shared<Front>(limits_);
  f->owner = this;
  fronts_.push_back(f);
  fronts->entries.push_back({serial_, f});
  t_last_ = {serial_, f.get()};
  return f.get();
}

void FrontCaches::thread_exited(void* p) {
  auto* fronts = static_cast<ThreadFronts*>(p);
  t_last_ = {0, nullptr};
  t_fronts = nullptr;
  for (ThreadFronts::Entry& e : fronts->entries) {
    FrontCaches* owner;
    {
      std::lock_guard<FrontLock> lock(e.front->lock);
      owner = e.front->owner;
    }
    if (owner) owner->exited_(owner->owner_, e.front.get());
  }
  delete fronts;
}

// ----------------------------------------------- under the owner's lock ---

bool FrontCaches::adopt(cudaStream_t stream, uint64_t addr, uint64_t size, uint64_t room) {
  Front* f = make_mine();
  if (!f) return false;
  {
    std::lock_guard<FrontLock> lock(f->lock);
    if (f->cache.cached_bytes() >= room) return false;
    if (!f->cache.adopt(stream, addr, size)) return false;
  }
  front_of_.emplace(addr, f);
  return true;
}

bool FrontCaches::find(uint64_t addr, FrontCache::Record* out) const {
  auto it = front_of_.find(addr);
  if (it == front_of_.end()) return false;
  std::optional<FrontCache::Record> r;
  {
    std::lock_guard<FrontLock> lock(it->second->lock);
    r = it->second->cache.find(addr);
  }
  if (!r) return false;  // cannot happen: records leave under the owner's lock
  *out = *r;
  return true;
}

FrontCaches::Detach FrontCaches::detach(uint64_t addr, uint64_t* requested) {
  auto it = front_of_.find(addr);
  if (it == front_of_.end()) return Detach::kNoRecord;
  FrontCache::Record r;
  {
    std::lock_guard<FrontLock> lock(it->second->lock);
    if (!it->second->cache.detach(addr, &r)) return Detach::kCached;
  }
  front_of_.erase(it);
  *requested = r.requested;
  return Detach::kDetached;
}

void FrontCaches::drain(std::optional<cudaStream_t> stream, std::optional<uint64_t> larger_than,
                        std::vector<FrontCache::Drained>* out) {
  if (front_of_.empty()) return;
  const size_t first = out->size();
  for (const std::shared_ptr<Front>& f : fronts_) {
    std::lock_guard<FrontLock> lock(f->lock);
    if (!stream)
      f->cache.drain(out);
    else
      f->cache.drain(*stream, larger_than, out);
  }
  for (size_t i = first; i < out->size(); ++i) front_of_.erase((*out)[i].addr);
}

void FrontCaches::drain(Front* front, std::vector<FrontCache::Drained>* out) {
  const size_t first = out->size();
  {
    std::lock_guard<FrontLock> lock(front->lock);
    front->cache.drain(out);
  }
  for (size_t i = first; i < out->size(); ++i) front_of_.erase((*out)[i].addr);
}

void FrontCaches::retire(Front* front, std::vector<FrontCache::Drained>* cached,
                         std::vector<FrontCache::Record>* live, FrontCache::Counts* counts) {
  const size_t first_cached = cached->size(), first_live = live->size();
  {
    std::lock_guard<FrontLock> lock(front->lock);
    front->cache.detach_all(cached, live);
    *counts = front->cache.take_counts();
    front->owner = nullptr;
  }
  for (size_t i = first_live; i < live->size(); ++i) front_of_.erase((*live)[i].addr);
  for (size_t i = first_cached; i < cached->size(); ++i) front_of_.erase((*cached)[i].addr);
  fronts_.erase(std::remove_if(fronts_.begin(), fronts_.end(),
                               [front](const std::shared_ptr<Front>& x) { return x.get() == front; }),
                fronts_.end());
}

FrontCaches::Totals FrontCaches::totals(bool settle) {
  Totals t;
  for (const std::shared_ptr<Front>& f : fronts_) {
    std::lock_guard<FrontLock> lock(f->lock);
    t.cached_bytes += f->cache.cached_bytes();
    t.cached_blocks += f->cache.cached_blocks();
    if (!settle) continue;
    t.low_water += f->cache.take_low_water();
    FrontCache::Counts counts = f->cache.take_counts();
    t.counts.allocations += counts.allocations;
    t.counts.frees += counts.frees;
  }
  return t;
}

}  // namespace alloc
}  // namespace gpuslack
