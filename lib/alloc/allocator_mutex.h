// AllocatorMutex: the lock of a device's allocator, a std::mutex that spins
// briefly before it blocks.
//
// The allocator's critical sections are short (the cached path holds the
// lock for under 100 ns: bench/README.md), so a thread that finds the lock
// held is usually looking at a holder running on another core, about to
// let go. Blocking at once costs a futex sleep and a wake-up, microseconds
// each, and under contention turns into a convoy: with 8 threads on 2
// cores sharing one allocator, alloc_bench's BM_DeviceAllocator_StreamPair
// took ~420 ns per pair with std::mutex against ~80 ns for one thread
// alone. So: up to kSpins polls of try_lock, a pause instruction apart
// (a few microseconds at most), then the mutex's own wait. The same
// benchmark with this lock: 185–270 ns per pair (bench/README.md, "The
// cached path", both locks side by side).
//
// FrontLock: the lock of one thread's front cache (Note [Front caches] in
// device_allocator.h). Its owner thread takes it around each cached
// alloc or free, uncontended but for the rare moments another thread
// drains the cache or asks it about a block; so it is a flag, one atomic
// exchange to take and a store to let go, that yields while it waits.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

namespace gpuslack {
namespace alloc {

class AllocatorMutex {
 public:
  void lock() {
    for (int i = 0; i < kSpins; ++i) {
      if (m_.try_lock()) return;
      pause();
    }
    m_.lock();
  }
  bool try_lock() { return m_.try_lock(); }
  void unlock() { m_.unlock(); }

 private:
  static constexpr int kSpins = 64;
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
  std::mutex m_;
};

class FrontLock {
 public:
  void lock() {
    while (held_.exchange(true, std::memory_order_acquire))
      while (held_.load(std::memory_order_relaxed)) std::this_thread::yield();
  }
  void unlock() { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

}  // namespace alloc
}  // namespace gpuslack
