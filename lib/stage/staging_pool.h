// StagingPool: a bounded pool of pinned host memory for staged copies
// (staged_copy.h).
//
// Slabs of pinned memory come from the runtime's own cudaHostAlloc
// (portable: any device may DMA from them), never through gpuslack's hooks,
// and are cut into at most 64 units; a block is a run of units of one slab.
// A block is handed out by acquire(), filled or drained by a copy, and comes
// back either at once (release(): nothing enqueued touches it any more) or
// once the work enqueued on its stream so far has completed (release_after():
// an event recorded now, polled, never waited for while memory remains).
//
// Note [Staging budget]: slabs are added on demand up to the budget and then
// kept (pinning is slow, and a training loop stages every step). When the
// budget is used up, acquire() waits for the oldest staging event to
// complete and retries: a copy stall, counted in stats(). It never waits
// without bound: past kMaxWait, or when the runtime cannot pin memory at
// all, it returns an empty block and the caller does (the rest of) the copy
// through the runtime's own call, as it would have been done without
// gpuslack. So the pool may slow a copy down to what the native call costs;
// it never fails one. After such a give-up it answers at once until one of
// its events has completed, so a stream stuck behind a long kernel costs one
// wait, not one per copy.
//
// The interface is acquire/release only, so that the slabs can later come
// from the caching pinned host heap instead of cudaHostAlloc.
//
// Thread safety: any thread. One mutex, never held across a runtime call
// that can block (pinning, waiting for an event). The caller must have
// checked that the thread has no runtime error pending: the pool clears
// the errors its own failed calls leave.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "absl/functional/function_ref.h"
#include "sync/event_pool.h"
#include "stage/stream_ref.h"

namespace gpuslack {
namespace stage {

struct StagingBlock {
  char* data = nullptr;
  size_t bytes = 0;   // usable: at least what was asked
  uint32_t slab = 0;
  uint64_t mask = 0;  // the units it holds in its slab
  explicit operator bool() const { return data != nullptr; }
};

struct StagingPoolStats {
  uint64_t budget_bytes = 0;
  uint64_t pinned_bytes = 0;       // slabs held (never more than the budget)
  uint64_t in_use_bytes = 0;       // blocks handed out or waiting for their event
  uint64_t peak_in_use_bytes = 0;
  uint64_t budget_waits = 0;       // acquires that waited for a staging event (copy stalls)
  uint64_t budget_wait_ns = 0;
  uint64_t gave_up = 0;            // acquires that returned empty: the copy went native
  uint64_t pin_failures = 0;       // cudaHostAlloc refused a slab
  uint64_t record_failures = 0;    // release_after could not record: waited for the stream instead
};

class StagingPool {
 public:
  // The longest acquire() waits for staging events before giving up.
  static constexpr std::chrono::milliseconds kMaxWait{100};

  // `max_block_bytes`: the largest block acquire() must serve (the copy
  // chunk). The budget is rounded down to whole slabs, at least one.
  StagingPool(size_t budget_bytes, size_t max_block_bytes);
  // Frees the slabs: only when nothing enqueued uses them any more (tests).
  ~StagingPool();
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  // A block of at least `bytes` (1 <= bytes <= max_block()). With `wait`
  // false it never waits for an event (a caller that holds a block must not:
  // two such callers could wait for each other), else as the note says.
  // Empty when none can be had.
  StagingBlock acquire(size_t bytes, bool wait = true);
  // Nothing enqueued reads or writes the block any more.
  void release(StagingBlock block);
  // Reusable once the work enqueued on `stream` until now has completed.
  void release_after(StagingBlock block, const StreamRef& stream);

  size_t max_block() const { return max_block_; }
  StagingPoolStats stats() const;
  // Tests of Note [The stager after a fork] (staged_copy.cc) only: runs
  // `during` while the calling thread holds the pool's lock.
  void while_locked(absl::FunctionRef<void()> during);

 private:
  struct Slab {
    char* base;
    uint64_t used;  // one bit per unit
  };
  struct InFlight {
    StagingBlock block;
    sync::PooledEvent event;
    uint64_t seq;
  };
  struct Queue {  // one per stream: its events complete in order
    uint64_t key;
    std::deque<InFlight> entries;
  };

  bool fit_locked(size_t units, StagingBlock* out);
  void free_locked(const StagingBlock& b);
  // Frees every in-flight block whose event has completed; true if any.
  bool reap_locked();
  const InFlight* oldest_locked() const;

  size_t unit_ = 0;           // bytes
  size_t units_per_slab_ = 0;
  size_t max_block_ = 0;
  size_t max_slabs_ = 0;

  mutable std::mutex mu_;
  std::condition_variable released_;
  std::vector<Slab> slabs_;
  int growing_ = 0;           // slabs being pinned right now
  bool pin_failed_ = false;
  bool stuck_ = false;        // gave up; cleared when an event completes
  std::vector<Queue> queues_;
  uint64_t next_seq_ = 0;
  StagingPoolStats stats_;
};

}  // namespace stage
}  // namespace gpuslack
