// FrontCaches: one allocator's front caches, one per thread that frees on a
// stream (Note [Front caches] in device_allocator.h): each thread finds its
// own without a shared lock, and the allocator finds which front holds a
// record of a block. What a block's record means (cached or live) is
// FrontCache's; what the allocator's books do with it is the allocator's
// (device_allocator_front.cc).
//
// Contract.
//   - take() and put() are the cached pair: the calling thread's front
//     alone, under its lock alone (they run while another thread holds the
//     owner's lock). A thread with no front here gets nullopt, kNoRecord.
//   - Every other call runs under the owner's lock (the allocator's mutex)
//     and takes fronts' locks inside it: the owner's lock first, never the
//     other way round. A block has a record in at most one front: adopt()
//     gives it one in the calling thread's front (made on first use),
//     drain(), detach() and retire() take it out; find() and detach() ask
//     the front that has it, empty() says whether any has one.
//   - A front is shared by its thread and this object, and freed by
//     whichever lets go last. When the thread exits (a pthread key's
//     destructor, which glibc runs after the thread's C++ thread_local
//     destructors, which may still allocate), `exited` gets the front, no
//     lock held; the owner takes its lock and retire()s it. After orphan()
//     (or the destructor), exiting threads call nothing: their fronts are
//     freed with them.
//   - A thread finds its front by this object's serial, a number never
//     reused, so that a front of a destroyed allocator is never taken for
//     a new one at the same address: the last one used in a trivially
//     destructible thread_local, the others in the thread's list.
//   - forget_thread_after_fork(), in a fork's child, on the thread that
//     forked: the thread forgets its fronts, the parent's allocators',
//     without touching them (no lock, no allocation).
// No CUDA calls.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "alloc/allocator_mutex.h"
#include "alloc/front_cache.h"
#include "base/absl_containers.h"

namespace gpuslack {
namespace alloc {

class FrontCaches {
 public:
  struct Front {
    explicit Front(FrontCache::Limits limits) : cache(limits) {}
    FrontLock lock;
    FrontCache cache;
    FrontCaches* owner = nullptr;  // under lock; nullptr once orphaned
  };
  // A thread with a front here is exiting: `owner` is the one given below.
  using ThreadExited = void (*)(void* owner, Front* front);

  // Each front made with `limits`.
  FrontCaches(FrontCache::Limits limits, ThreadExited exited, void* owner);
  ~FrontCaches() { orphan(); }
  FrontCaches(const FrontCaches&) = delete;
  FrontCaches& operator=(const FrontCaches&) = delete;

  static void forget_thread_after_fork();

  // The cached pair. take(): the block of `size` the calling thread freed
  // last on `stream`, live again with `requested` bytes. put(): frees it
  // on `stream` (FrontCache::put); `*over` is the front when this put took
  // it past its limits (the owner drains it), else nullptr.
  // Inline: the cached pair's whole cost is here and in FrontCache.
  std::optional<uint64_t> take(cudaStream_t stream, uint64_t size, uint64_t requested) {
    Front* f = mine();
    if (!f) return std::nullopt;
    f->lock.lock();
    std::optional<uint64_t> a = f->cache.take(stream, size, requested);
    f->lock.unlock();
    return a;
  }
  FrontCache::Put put(uint64_t addr, cudaStream_t stream, Front** over) {
    *over = nullptr;
    Front* f = mine();
    if (!f) return FrontCache::Put::kNoRecord;
    f->lock.lock();
    FrontCache::Put put = f->cache.put(addr, stream);
    if (put == FrontCache::Put::kCached && f->cache.over()) *over = f;
    f->lock.unlock();
    return put;
  }

  // Under the owner's lock, from here on.
  // The block at `addr`, freed on `stream`, cached in the calling thread's
  // front; false (nothing changes) when the front caches `room` bytes or
  // more already, or is past a limit, or none can be made.
  bool adopt(cudaStream_t stream, uint64_t addr, uint64_t size, uint64_t room);
  bool empty() const { return front_of_.empty(); }  // no block has a record
  bool has_record(uint64_t addr) const { return front_of_.find(addr) != front_of_.end(); }
  bool find(uint64_t addr, FrontCache::Record* out) const;
  // A live record leaves its front (kDetached, *requested its bytes); a
  // cached one stays (kCached: the block is freed).
  enum class Detach { kNoRecord, kDetached, kCached };
  Detach detach(uint64_t addr, uint64_t* requested);
  // Cached blocks leave: of every front, or only those freed on `stream`
  // (and of those, with `larger_than`, only the larger ones).
  void drain(std::optional<cudaStream_t> stream, std::optional<uint64_t> larger_than,
             std::vector<FrontCache::Drained>* out);
  void drain(Front* front, std::vector<FrontCache::Drained>* out);  // one front's, all
  // `front`'s thread exited: every record leaves (cached to `cached`, live
  // to `live`), its counts to `counts`, and the front is orphaned.
  void retire(Front* front, std::vector<FrontCache::Drained>* cached, std::vector<FrontCache::Record>* live,
              FrontCache::Counts* counts);
  struct Totals {
    uint64_t cached_bytes = 0, cached_blocks = 0, low_water = 0;
    FrontCache::Counts counts;  // settle only
  };
  // What the fronts cache; `settle`: their low waters and counts since the
  // last settle too (FrontCache::take_low_water, take_counts).
  Totals totals(bool settle);
  bool any() const { return !fronts_.empty(); }  // some thread has a front
  // Every front forgets this object (the destructor's; idempotent).
  void orphan();

 private:
  struct ThreadFronts;
  static void thread_exited(void* fronts);  // the pthread key's destructor
  // The calling thread's, or nullptr; no lock. The last one it used first
  // (trivially destructible, constant-initialized: no load-time code).
  struct LastFront {
    uint64_t serial;  // 0: none
    Front* front;
  };
  static inline thread_local LastFront t_last_{0, nullptr};
  Front* mine() const { return t_last_.serial == serial_ ? t_last_.front : mine_listed(); }
  Front* mine_listed() const;  // in the thread's list
  Front* make_mine();

  const uint64_t serial_;
  FrontCache::Limits limits_;
  ThreadExited exited_;
  void* owner_;
  std::vector<std::shared_ptr<Front>> fronts_;      // under the owner's lock
  absl::flat_hash_map<uint64_t, Front*> front_of_;  // the same: blocks with a record
};

}  // namespace alloc
}  // namespace gpuslack
