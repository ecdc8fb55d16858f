#include "pin/pinned_heap.h"

#include <cuda_runtime_api.h>

#include <thread>

#include "sync/stream_registry.h"
#include "cuda/runtime_api.h"
#include "base/clock.h"
#include "log/log.h"

namespace gpuslack {
namespace pin {

PinnedHeap::PinnedHeap(uint64_t chunk_bytes, uint64_t cap_bytes)
    : chunks_(chunk_bytes, cap_bytes), arena_(&chunks_) {
  stats_.cap = cap_bytes;
  stats_.chunk_size = chunk_bytes;
}

PinnedHeap::~PinnedHeap() {
  std::lock_guard<std::mutex> lock(mu_);
  if (sync::capturing()) return;
  settle_deferred();
  std::vector<uintptr_t> ready;
  fences_.wait_all(&ready);
  give_back(ready);
  // Then the arena is destroyed and the chunks given back (members).
}

bool PinnedHeap::serves(unsigned int flags) {
  return (flags & ~static_cast<unsigned int>(cudaHostAllocPortable | cudaHostAllocMapped)) == 0;
}

// ------------------------------------------------------------ allocating ---

bool PinnedHeap::ensure_arena() {
  if (arena_.created()) return true;
  // Creating the arena pins its first chunk: not during a capture.
  if (sync::capturing()) return false;
  std::string why;
  chunks_.set_grow(true);
  if (!arena_.create(&why)) {
    if (!arena_failed_logged_)
      log::warn("pinned heap: not serving yet ({}); cudaMallocHost/cudaHostAlloc pass through", why);
    arena_failed_logged_ = true;
    return false;
  }
  note_chunks();
  log::info("pinned heap: chunks of {} bytes, at most {} bytes pinned", chunks_.chunk_size(), chunks_.cap());
  return true;
}

void* PinnedHeap::allocate(size_t bytes, unsigned int flags) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!serves(flags)) {
    ++stats_.passthrough;
    return nullptr;
  }
  if (bytes == 0) return nullptr;
  int device = 0;
  if (cuda::get_device(&device) == cudaSuccess) fences_.saw_device(device);
  void* p = ensure_arena() ? allocate_locked(bytes, lock) : nullptr;
  if (!p) {
    ++stats_.fallbacks;
    note_chunks();
    return nullptr;
  }
  size_t size = arena_.usable_size(p);
  live_[reinterpret_cast<uintptr_t>(p)] = size;
  stats_.live += size;
  if (stats_.live > stats_.peak_live) stats_.peak_live = stats_.live;
  ++stats_.allocations;
  note_chunks();
  return p;
}

void* PinnedHeap::try_allocate(size_t bytes, bool grow) {
  chunks_.set_grow(grow);
  void* p = arena_.allocate(bytes);
  chunks_.set_grow(true);
  return p;
}

void* PinnedHeap::allocate_locked(size_t bytes, std::unique_lock<std::mutex>& lock) {
  // See Note [Frees during capture]: only memory jemalloc holds already.
  if (sync::capturing()) return try_allocate(bytes, false);
  settle_deferred();
  // What the GPU is done with goes back first (a query per fenced batch).
  reclaim(false);
  if (void* p = try_allocate(bytes, false)) return p;
  // A miss. Before pinning more: fence every block still held back and
  // take back what is already done.
  if (fences_.pending_blocks() > 0) {
    reclaim(true);
    if (void* p = try_allocate(bytes, false)) return p;
  }
  // Pinning a chunk costs milliseconds (the runtime touches and locks every
  // page); fences recorded a moment ago usually complete sooner. If the
  // blocks they hold back would serve, poll them first, for at most what
  // pinning would cost.
  if (pending_bytes_ >= bytes) {
    if (void* p = poll_pending(bytes, lock)) return p;
    if (sync::capturing()) return nullptr;  // began while the lock was released
  }
  chunks_.clear_cap_refused();
  if (void* p = try_allocate(bytes, true)) return p;
  if (!chunks_.cap_refused()) return nullptr;  // the runtime refused: its own call will say why
  // At the cap: trim (wait for the pending frees' fences: a stall, counted;
  // give free extents back to their chunks; release the chunks no block
  // uses), and try once more.
  stats_.stall_s += trim_locked();
  chunks_.clear_cap_refused();
  if (void* p = try_allocate(bytes, true)) return p;
  if (chunks_.cap_refused()) ++stats_.cap_hits;
  return nullptr;
}

void* PinnedHeap::poll_pending(size_t bytes, std::unique_lock<std::mutex>& lock) {
  // What the chunk this allocation would pin costs, as measured so far.
  double budget = chunks_.pin_seconds(bytes);
  if (budget < kMinPollSeconds) budget = kMinPollSeconds;
  if (budget > kMaxPollSeconds) budget = kMaxPollSeconds;
  const double start = clock::monotonic_seconds();
  void* p = nullptr;
  do {
    // Without the lock: frees and other allocations go on meanwhile.
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    lock.lock();
    if (sync::capturing()) break;  // no event may be queried now
    reclaim(false);
    p = try_allocate(bytes, false);
  } while (!p && pending_bytes_ >= bytes && clock::monotonic_seconds() - start < budget);
  stats_.stall_s += clock::monotonic_seconds() - start;
  return p;
}

// --------------------------------------------------------------- freeing ---

bool PinnedHeap::free(void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(reinterpret_cast<uintptr_t>(p));
  if (it == live_.end()) return false;
  const uintptr_t block = it->first;
  const size_t size = it->second;
  live_.erase(it);
  stats_.live -= size;
  freed_[block] = size;
  pending_bytes_ += size;
  ++stats_.frees;
  int device = 0;
  if (cuda::get_device(&device) == cudaSuccess) fences_.saw_device(device);
  if (sync::capturing()) {
    deferred_.push_back(block);
    ++stats_.deferred_frees;
    return true;
  }
  fences_.add(block);
  open_bytes_ += size;
  // Fence a full batch now: it bounds what an open batch holds back.
  if (fences_.open_blocks() >= kEpochBlocks || open_bytes_ >= kEpochBytes) {
    fences_.close();
    open_bytes_ = 0;
  }
  return true;
}

void PinnedHeap::settle_deferred() {
  for (uintptr_t block : deferred_) {
    fences_.add(block);
    open_bytes_ += freed_[block];
  }
  deferred_.clear();
}

void PinnedHeap::reclaim(bool close_open) {
  if (close_open) {
    fences_.close();
    open_bytes_ = 0;
  }
  std::vector<uintptr_t> ready;
  fences_.poll(&ready);
  give_back(ready);
}

void PinnedHeap::give_back(const std::vector<uintptr_t>& ready) {
  for (uintptr_t block : ready) {
    auto it = freed_.find(block);
    if (it == freed_.end()) continue;  // cannot happen; never twice
    pending_bytes_ -= it->second;
    freed_.erase(it);
    arena_.free(reinterpret_cast<void*>(block));
  }
}

// ------------------------------------------------------------- the rest ---

bool PinnedHeap::owns(const void* p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  if (a < low_.load(std::memory_order_acquire) || a >= high_.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return chunks_.contains(p);
}

size_t PinnedHeap::block_size(const void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(reinterpret_cast<uintptr_t>(p));
  return it == live_.end() ? 0 : it->second;
}

uint64_t PinnedHeap::release_locked() {
  arena_.purge();
  uint64_t released = chunks_.release_empty();
  stats_.trimmed += released;
  note_chunks();
  return released;
}

double PinnedHeap::trim_locked() {
  settle_deferred();
  // Every freed block is fenced and waited for, so that all of it can be
  // released now.
  std::vector<uintptr_t> ready;
  double waited = fences_.wait_all(&ready);
  open_bytes_ = 0;
  give_back(ready);
  release_locked();
  return waited;
}

uint64_t PinnedHeap::trim() {
  std::lock_guard<std::mutex> lock(mu_);
  if (sync::capturing()) return 0;
  uint64_t before = stats_.trimmed;
  trim_locked();
  return stats_.trimmed - before;
}

void PinnedHeap::note_chunks() {
  stats_.pinned = chunks_.pinned();
  stats_.peak_pinned = chunks_.peak_pinned();
  if (chunks_.count() == 0) return;
  if (chunks_.low() < low_.load(std::memory_order_relaxed)) low_.store(chunks_.low(), std::memory_order_release);
  if (chunks_.high() > high_.load(std::memory_order_relaxed)) high_.store(chunks_.high(), std::memory_order_release);
}

PinnedStats PinnedHeap::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  note_chunks();
  PinnedStats s = stats_;
  s.chunks = chunks_.count();
  s.chunks_allocated = chunks_.allocated_total();
  s.chunks_released = chunks_.released_total();
  s.pending_free = fences_.pending_blocks() + deferred_.size();
  s.epochs = fences_.epochs_closed();
  return s;
}

}  // namespace pin
}  // namespace gpuslack
