#include "stage/staging_pool.h"

#include <time.h>

#include <algorithm>

#include "cuda/pointer_kind.h"
#include "cuda/runtime_api.h"

namespace gpuslack {
namespace stage {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kPage = 4096;
constexpr size_t kMaxUnits = 64;

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

uint64_t ns_since(Clock::time_point t) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count());
}

// The lowest position of `n` consecutive clear bits in `used`, or -1.
int find_run(uint64_t used, size_t n, size_t limit) {
  uint64_t free_bits = ~used;
  if (limit < 64) free_bits &= (1ull << limit) - 1;
  uint64_t run = free_bits;
  for (size_t i = 1; i < n && run; ++i) run &= free_bits >> i;
  return run ? __builtin_ctzll(run) : -1;
}

uint64_t run_mask(int first, size_t n) {
  uint64_t bits = n >= 64 ? ~0ull : (1ull << n) - 1;
  return bits << first;
}

// Polls `e` for up to `slice` (sleeping a little longer each time): true
// once it has completed (or can no longer be asked).
bool poll_event(cudaEvent_t e, std::chrono::microseconds slice) {
  auto end = Clock::now() + slice;
  long nap_ns = 5000;
  for (;;) {
    cudaError_t r = cuda::event_query(e);
    if (r == cudaSuccess) return true;
    if (r != cudaErrorNotReady) {
      cuda::get_last_error();
      return true;
    }
    if (Clock::now() >= end) return false;
    timespec ts{0, nap_ns};
    nanosleep(&ts, nullptr);
    nap_ns = std::min(nap_ns * 2, 100000L);
  }
}

}  // namespace

StagingPool::StagingPool(size_t budget_bytes, size_t max_block_bytes) {
  max_block_bytes = std::max<size_t>(max_block_bytes, 1);
  // Half a slab per largest block, so two pipelined chunks fit in one slab.
  unit_ = round_up((max_block_bytes + kMaxUnits / 2 - 1) / (kMaxUnits / 2), kPage);
  units_per_slab_ = std::clamp<size_t>(budget_bytes / unit_, 1, kMaxUnits);
  max_block_ = std::min(kMaxUnits / 2, units_per_slab_) * unit_;
  const size_t slab_bytes = units_per_slab_ * unit_;
  max_slabs_ = std::max<size_t>(1, budget_bytes / slab_bytes);
  stats_.budget_bytes = max_slabs_ * slab_bytes;
}

StagingPool::~StagingPool() {
  for (Queue& q : queues_)
    for (InFlight& f : q.entries) sync::give_event(f.event);
  for (Slab& s : slabs_)
    if (cuda::free_host(s.base) != cudaSuccess) cuda::get_last_error();
  // The addresses may come back as other memory: no cached kind may outlive them.
  if (!slabs_.empty()) cuda::invalidate_pointer_kinds();
}

bool StagingPool::fit_locked(size_t units, StagingBlock* out) {
  for (size_t i = 0; i < slabs_.size(); ++i) {
    int first = find_run(slabs_[i].used, units, units_per_slab_);
    if (first < 0) continue;
    out->mask = run_mask(first, units);
    out->slab = static_cast<uint32_t>(i);
    out->data = slabs_[i].base + static_cast<size_t>(first) * unit_;
    out->bytes = units * unit_;
    slabs_[i].used |= out->mask;
    stats_.in_use_bytes += out->bytes;
    stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
    return true;
  }
  return false;
}

void StagingPool::free_locked(const StagingBlock& b) {
  slabs_[b.slab].used &= ~b.mask;
  stats_.in_use_bytes -= b.bytes;
}

bool StagingPool::reap_locked() {
  bool any = false;
  for (Queue& q : queues_) {
    while (!q.entries.empty()) {
      InFlight& f = q.entries.front();
      cudaError_t r = cuda::event_query(f.event.event);
      if (r == cudaErrorNotReady) break;
      if (r != cudaSuccess) cuda::get_last_error();  // cannot be asked: its work is over or lost
      free_locked(f.block);
      sync::give_event(f.event);
      q.entries.pop_front();
      any = true;
    }
  }
  // Per-thread streams come and go with threads: drop idle queues.
  if (queues_.size() > 64)
    queues_.erase(std::remove_if(queues_.begin(), queues_.end(), [](const Queue& q) { return q.entries.empty(); }),
                  queues_.end());
  if (any) {
    stuck_ = false;
    released_.notify_all();
  }
  return any;
}

const StagingPool::InFlight* StagingPool::oldest_locked() const {
  const InFlight* oldest = nullptr;
  for (const Queue& q : queues_)
    if (!q.entries.empty() && (!oldest || q.entries.front().seq < oldest->seq)) oldest = &q.entries.front();
  return oldest;
}

StagingBlock StagingPool::acquire(size_t bytes, bool wait) {
  StagingBlock b;
  if (bytes == 0 || bytes > max_block_) return b;
  const size_t units = (bytes + unit_ - 1) / unit_;
  const Clock::time_point start = Clock::now();
  bool waited = false;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (fit_locked(units, &b)) break;
    if (reap_locked() && fit_locked(units, &b)) break;
    if (!pin_failed_ && slabs_.size() + growing_ < max_slabs_) {
      ++growing_;
      lock.unlock();
      void* p = nullptr;
      const size_t slab_bytes = units_per_slab_ * unit_;
      cudaError_t r = cuda::host_alloc(&p, slab_bytes, cudaHostAllocPortable);
      if (r != cudaSuccess) cuda::get_last_error();
      lock.lock();
      --growing_;
      if (r == cudaSuccess && p) {
        slabs_.push_back({static_cast<char*>(p), 0});
        stats_.pinned_bytes += slab_bytes;
      } else {
        // Pinned memory is scarce: live with the slabs there are.
        pin_failed_ = true;
        ++stats_.pin_failures;
      }
      continue;
    }
    if (!wait || stuck_ || slabs_.empty()) break;
    if (Clock::now() - start >= kMaxWait) {
      stuck_ = true;
      break;
    }
    waited = true;
    const InFlight* oldest = oldest_locked();
    if (!oldest) {
      // Every block is held by a copy in progress: it releases soon.
      released_.wait_for(lock, std::chrono::microseconds(200));
      continue;
    }
    cudaEvent_t e = oldest->event.event;
    lock.unlock();
    // A slice at a time: the entry may be reaped (and its event reused)
    // by another thread meanwhile; the loop then looks again.
    poll_event(e, std::chrono::milliseconds(1));
    lock.lock();
  }
  if (waited) {
    ++stats_.budget_waits;
    stats_.budget_wait_ns += ns_since(start);
  }
  if (!b) ++stats_.gave_up;
  return b;
}

void StagingPool::release(StagingBlock block) {
  if (!block) return;
  std::lock_guard<std::mutex> lock(mu_);
  free_locked(block);
  released_.notify_all();
}

void StagingPool::release_after(StagingBlock block, const StreamRef& stream) {
  if (!block) return;
  sync::PooledEvent e = sync::take_event(stream.device, sync::EventKind::kNoTiming);
  if (!e || cuda::event_record(e.event, stream.handle) != cudaSuccess) {
    // A stream of another device, or no event to be had: wait for the
    // stream instead (rare; correct, and a stall).
    cuda::get_last_error();
    sync::give_event(e);
    if (cuda::stream_synchronize(stream.handle) != cudaSuccess) cuda::get_last_error();
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.record_failures;
    free_locked(block);
    released_.notify_all();
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto q = std::find_if(queues_.begin(), queues_.end(), [&](const Queue& x) { return x.key == stream.key; });
  if (q == queues_.end()) {
    queues_.push_back({stream.key, {}});
    q = queues_.end() - 1;
  }
  q->entries.push_back({block, e, next_seq_++});
}

void StagingPool::while_locked(absl::FunctionRef<void()> during) {
  std::lock_guard<std::mutex> lock(mu_);
  during();
}

StagingPoolStats StagingPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace stage
}  // namespace gpuslack
