// The activity buffers gpuslack lends CUPTI, and the queue that carries
// the filled ones to the timeline's worker (timeline/cupti_session.h).
//
// BufferPool: fixed-size buffers (8-byte aligned, as CUPTI requires),
// allocated lazily and recycled.
//
// Note [Buffers per launching thread]: CUPTI 13 keeps one buffer per
// thread that generates records (CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER,
// default 1: cupti_activity.h 13.2), and holds it until it is full or flushed, so a fixed count of
// buffers runs dry with about as many launching threads: 16 buffers of
// 4 MiB did with ~14, and records were dropped. The pool therefore counts
// the buffers CUPTI holds (lent, not yet handed back), and may have
// max(its cap, held + a reserve of half the cap) buffers, up to a ceiling
// (4x the cap by default): it grows by one buffer per launching thread,
// while a backlog in gpuslack's own worker (buffers handed back, not yet
// processed) never grows it; and a refusal makes the session's worker
// flush at once, within its period of 100 ms, so that buffers CUPTI still
// holds for threads that no longer launch (or exited) come back. A request
// past that gets none: CUPTI then
// drops records (and counts them: cuptiActivityGetNumDroppedRecords); the
// pool counts its refusals. Except where refusing is unsafe
// (set_refusal_safe(false): a CUPTI before 12.9 crashes on a declined
// buffer, timeline/cupti_session.h): then the request gets a buffer past the
// ceiling, counted (beyond_ceiling()). Nothing waits.
//
// Setting the attribute to 0 instead (one buffer shared by every thread)
// was weighed and not done: CUPTI then serializes every thread's records on
// one buffer (the contention per-thread buffers were made the default to
// avoid: CUPTI 13.0's release notes), and the attribute is process-wide,
// set before any tool registers its callbacks: it would change the buffers
// of the tools gpuslack shares CUPTI with.
// CompletedQueue: filled buffers in delivery order, from CUPTI's
// buffer-completed callback (on whatever thread CUPTI calls it: often an
// application thread) to the worker. A ring sized to the pool's most
// buffers, so a push never allocates and never finds it full; the callback
// holds its lock for a few instructions and never waits for the worker.
// Sequence numbers let a snapshot wait until the buffers a flush delivered
// have been processed.
//
// Thread safety: every method, any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace gpuslack {
namespace timeline {

class BufferPool {
 public:
  // `ceiling_bytes` 0: 4x `limit_bytes`.
  BufferPool(uint64_t limit_bytes, size_t buffer_bytes, uint64_t ceiling_bytes = 0);
  ~BufferPool();  // frees every buffer (all must be back)
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A free buffer, a new one while the pool may grow, or nullptr (counted;
  // never where refusing is unsafe). Lent to CUPTI from here.
  uint8_t* acquire();
  // CUPTI handed `buffer` back (buffer-completed): false for a buffer the
  // pool never lent (another tool's), which is then not counted.
  bool returned_by_cupti(const uint8_t* buffer);
  // Back to the pool: false (nothing done) for a buffer the pool never lent.
  bool release(uint8_t* buffer);
  bool owns(const uint8_t* buffer) const;
  // False: acquire() never returns nullptr (lends past the ceiling instead).
  void set_refusal_safe(bool safe) { refusal_safe_.store(safe, std::memory_order_relaxed); }

  size_t buffer_bytes() const { return buffer_bytes_; }
  size_t max_buffers() const { return max_buffers_; }          // the cap
  size_t ceiling_buffers() const { return ceiling_buffers_; }  // the most it grows to
  uint64_t limit_bytes() const { return static_cast<uint64_t>(max_buffers_) * buffer_bytes_; }
  uint64_t peak_bytes() const;
  size_t held_by_cupti() const;
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
  uint64_t beyond_ceiling() const { return beyond_ceiling_.load(std::memory_order_relaxed); }

 private:
  size_t may_have_locked() const;  // how many buffers the pool may have now

  const size_t buffer_bytes_;
  const size_t max_buffers_;
  const size_t ceiling_buffers_;
  mutable std::mutex mu_;
  std::vector<uint8_t*> free_;  // capacity >= all_'s: release never allocates
  std::vector<uint8_t*> all_;   // capacity ceiling_buffers_ (more only past it)
  size_t allocating_ = 0;       // reserved slots whose allocation is in progress
  uint64_t lent_ = 0, returned_ = 0;  // to CUPTI, and back from it
  std::atomic<bool> refusal_safe_{true};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> beyond_ceiling_{0};
};

// How big each buffer of a pool capped at `limit_bytes` is: 1/16 of the
// cap, between 1 MiB and 8 MiB, never above the cap.
size_t buffer_bytes_for(uint64_t limit_bytes);

struct CompletedBuffer {
  uint8_t* buffer = nullptr;
  size_t valid_bytes = 0;
};

class CompletedQueue {
 public:
  explicit CompletedQueue(size_t capacity);

  // From CUPTI's callback: never blocks on the worker. False (the buffer is
  // not queued) only past `capacity`, which a pool-sized queue never is.
  bool push(const CompletedBuffer& b);
  // The worker: the oldest buffer, waiting up to `timeout`; false on
  // timeout or once closed and empty.
  bool pop(CompletedBuffer* out, std::chrono::milliseconds timeout);
  // The worker, once a popped buffer is fully processed.
  void mark_processed();
  // Buffers pushed so far; a snapshot waits for processed() to reach it.
  uint64_t pushed() const;
  // Waits until `seq` buffers have been processed, up to `timeout`.
  bool wait_processed(uint64_t seq, std::chrono::milliseconds timeout);
  // Wakes the worker for good (pop returns false once empty).
  void close();

 private:
  mutable std::mutex mu_;
  std::condition_variable ready_;      // a buffer arrived, or closed
  std::condition_variable processed_;  // one was processed
  std::vector<CompletedBuffer> ring_;
  size_t head_ = 0, size_ = 0;
  uint64_t pushed_ = 0, processed_count_ = 0;
  bool closed_ = false;
};

}  // namespace timeline
}  // namespace gpuslack
