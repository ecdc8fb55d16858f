#include "timeline/activity_buffers.h"

#include <algorithm>
#include <cstdlib>

namespace gpuslack {
namespace timeline {

size_t buffer_bytes_for(uint64_t limit_bytes) {
  constexpr uint64_t kMiB = 1 << 20;
  uint64_t b = std::clamp<uint64_t>(limit_bytes / 16, kMiB, 8 * kMiB);
  return static_cast<size_t>(std::min<uint64_t>(b, std::max<uint64_t>(limit_bytes, 8)));
}

BufferPool::BufferPool(uint64_t limit_bytes, size_t buffer_bytes, uint64_t ceiling_bytes)
    : buffer_bytes_((std::max<size_t>(buffer_bytes, 8) + 7) & ~size_t{7}),
      max_buffers_(static_cast<size_t>(std::max<uint64_t>(limit_bytes / buffer_bytes_, 1))),
      ceiling_buffers_(std::max(max_buffers_, static_cast<size_t>((ceiling_bytes ? ceiling_bytes : 4 * limit_bytes) /
                                                                  buffer_bytes_))) {
  free_.reserve(ceiling_buffers_);
  all_.reserve(ceiling_buffers_);
}

BufferPool::~BufferPool() {
  for (uint8_t* b : all_) std::free(b);
}

// Note [Buffers per launching thread] (activity_buffers.h).
size_t BufferPool::may_have_locked() const {
  size_t held = static_cast<size_t>(lent_ - returned_);
  size_t reserve = std::max<size_t>(max_buffers_ / 2, 1);
  return std::min(ceiling_buffers_, std::max(max_buffers_, held + reserve));
}

uint8_t* BufferPool::acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      uint8_t* b = free_.back();
      free_.pop_back();
      ++lent_;
      return b;
    }
    if (all_.size() + allocating_ >= may_have_locked()) {
      if (refusal_safe_.load(std::memory_order_relaxed)) {
        refused_.fetch_add(1, std::memory_order_relaxed);
        return nullptr;
      }
      if (all_.size() + allocating_ >= ceiling_buffers_) beyond_ceiling_.fetch_add(1, std::memory_order_relaxed);
    }
    ++allocating_;  // a slot, so that racing requests stay under the cap
  }
  // Outside the lock: a first request per buffer, rare.
  auto* b = static_cast<uint8_t*>(std::aligned_alloc(8, buffer_bytes_));
  std::lock_guard<std::mutex> lock(mu_);
  --allocating_;
  if (!b) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  if (all_.size() == all_.capacity()) {  // past the ceiling (refusing unsafe): rare
    all_.reserve(all_.size() * 2);
    free_.reserve(all_.capacity());
  }
  all_.push_back(b);
  ++lent_;
  return b;
}

bool BufferPool::returned_by_cupti(const uint8_t* buffer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (std::find(all_.begin(), all_.end(), buffer) == all_.end()) return false;
  ++returned_;
  return true;
}

bool BufferPool::release(uint8_t* buffer) {
  if (!buffer) return false;
  std::lock_guard<std::mutex> lock(mu_);
  // Only the pool's own: a buffer another tool lent CUPTI (which a
  // process-wide registration may hand to gpuslack's callback) is not taken
  // in, and is never lent on (at most all_.size() to search).
  if (std::find(all_.begin(), all_.end(), buffer) == all_.end()) return false;
  free_.push_back(buffer);
  return true;
}

bool BufferPool::owns(const uint8_t* buffer) const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::find(all_.begin(), all_.end(), buffer) != all_.end();
}

size_t BufferPool::held_by_cupti() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(lent_ - returned_);
}

uint64_t BufferPool::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<uint64_t>(all_.size()) * buffer_bytes_;  // never shrinks: the peak
}

CompletedQueue::CompletedQueue(size_t capacity) : ring_(std::max<size_t>(capacity, 1)) {}

bool CompletedQueue::push(const CompletedBuffer& b) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (size_ == ring_.size()) return false;
    ring_[(head_ + size_) % ring_.size()] = b;
    ++size_;
    ++pushed_;
  }
  ready_.notify_one();
  return true;
}

bool CompletedQueue::pop(CompletedBuffer* out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  ready_.wait_for(lock, timeout, [this] { return size_ > 0 || closed_; });
  if (size_ == 0) return false;
  *out = ring_[head_];
  head_ = (head_ + 1) % ring_.size();
  --size_;
  return true;
}

void CompletedQueue::mark_processed() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++processed_count_;
  }
  processed_.notify_all();
}

uint64_t CompletedQueue::pushed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pushed_;
}

bool CompletedQueue::wait_processed(uint64_t seq, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return processed_.wait_for(lock, timeout, [this, seq] { return processed_count_ >= seq; });
}

void CompletedQueue::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  ready_.notify_all();
}

}  // namespace timeline
}  // namespace gpuslack
