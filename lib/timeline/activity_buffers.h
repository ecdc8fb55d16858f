// The activity buffers gpuslack lends CUPTI, and the queue that carries
// the filled ones to the timeline's worker (timeline/cupti_session.h).
//
// BufferPool: fixed-size buffers (8-byte aligned, as CUPTI requires),
// allocated lazily up to a cap (gpu_timeline_buffer_mb) and recycled. A
// request when every buffer is lent gets none: CUPTI then drops records
// (and counts them: cuptiActivityGetNumDroppedRecords); the pool counts
// its refusals. Nothing waits.
//
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
  BufferPool(uint64_t limit_bytes, size_t buffer_bytes);
  ~BufferPool();  // frees every buffer (all must be back)
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A free buffer, a new one while under the cap, or nullptr (counted).
  uint8_t* acquire();
  // Back to the pool: false (nothing done) for a buffer the pool never lent.
  bool release(uint8_t* buffer);
  bool owns(const uint8_t* buffer) const;

  size_t buffer_bytes() const { return buffer_bytes_; }
  size_t max_buffers() const { return max_buffers_; }
  uint64_t limit_bytes() const { return static_cast<uint64_t>(max_buffers_) * buffer_bytes_; }
  uint64_t peak_bytes() const;
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  const size_t buffer_bytes_;
  const size_t max_buffers_;
  mutable std::mutex mu_;
  std::vector<uint8_t*> free_;  // capacity max_buffers_: release never allocates
  std::vector<uint8_t*> all_;   // capacity max_buffers_
  size_t allocating_ = 0;       // reserved slots whose allocation is in progress
  std::atomic<uint64_t> refused_{0};
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
