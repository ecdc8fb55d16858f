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
#pragma once

#include <mutex>

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

}  // namespace alloc
}  // namespace gpuslack
