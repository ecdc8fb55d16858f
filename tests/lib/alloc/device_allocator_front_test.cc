// DeviceAllocator's front caches (Note [Front caches]) on the simulated
// device (64 MiB, set by CMake): the cached pair reuses on the freeing
// stream and thread without the lock, and keeps what the lock gives: a
// double free refused from any thread, range checks that see a cached
// block as freed, record_stream and captures obeyed, the cached bytes
// counted as not allocated, and every cached block given back at a miss,
// trim, forget_stream and thread exit.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "alloc/device_allocator.h"
#include "cuda/driver_api.h"
#include "gpusim.h"
#include "sim_driver.h"
#include "sync/stream_registry.h"

namespace gpuslack {
namespace alloc {
namespace {

using test_support::kMiB;
using test_support::non_blocking;

// A block that went through the front once: the next pairs are the front's.
void* cycled(DeviceAllocator& a, size_t bytes, cudaStream_t s) {
  void* p = a.allocate(bytes, s);
  EXPECT_TRUE(a.free(p, s));
  EXPECT_EQ(p, a.allocate(bytes, s));
  return p;
}

TEST(DeviceAllocatorFront, ADoubleFreeIsRefusedOnAnyThreadAndAnyPath) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  ASSERT_TRUE(a.ok());
  cudaStream_t s = non_blocking();
  void* p = cycled(a, 64 * 1024, s);
  ASSERT_TRUE(a.free(p, s));
  EXPECT_FALSE(a.free(p, s));  // the front's own
  EXPECT_FALSE(a.free(p));     // the stream-less path asks the front
  bool other_stream = true, other_thread = true;
  std::thread([&] {
    other_stream = a.free(p, s);
    other_thread = a.free(p);
  }).join();
  EXPECT_FALSE(other_stream);
  EXPECT_FALSE(other_thread);
  // Live again: freed once from another thread, then refused everywhere.
  ASSERT_EQ(p, a.allocate(64 * 1024, s));
  std::thread([&] { other_thread = a.free(p, s); }).join();
  EXPECT_TRUE(other_thread);
  EXPECT_FALSE(a.free(p, s));
  EXPECT_FALSE(a.free(p));
  DeviceStats st = a.stats();
  EXPECT_EQ(st.allocations, st.frees);
  EXPECT_EQ(0u, st.allocated);
  cudaStreamDestroy(s);
}

TEST(DeviceAllocatorFront, RangeChecksSeeACachedBlockAsFreed) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  cudaStream_t s = non_blocking();
  char* p = static_cast<char*>(a.allocate(1000, s));
  ASSERT_TRUE(a.holds_range(p, 1000));
  ASSERT_TRUE(a.free(p, s));  // into the front
  size_t size = 1;
  EXPECT_FALSE(a.holds_range(p, 1));
  EXPECT_EQ(nullptr, a.block_of(p + 10, &size));
  EXPECT_EQ(0u, size);
  EXPECT_FALSE(a.record_stream(p, s));
  // Taken back with fewer bytes asked: the check follows the new request.
  ASSERT_EQ(p, a.allocate(800, s));
  EXPECT_TRUE(a.holds_range(p, 800));
  EXPECT_FALSE(a.holds_range(p, 801));
  EXPECT_EQ(p, a.block_of(p + 10, &size));
  EXPECT_EQ(1024u, size);
  // And after it leaves the front (a stream-less free), freed.
  ASSERT_TRUE(a.free(p));
  EXPECT_FALSE(a.holds_range(p, 1));
  cudaStreamDestroy(s);
}

TEST(DeviceAllocatorFront, RecordStreamTakesTheBlockOutOfTheFront) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  cudaStream_t s1 = non_blocking(), s2 = nullptr;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  void* p = cycled(a, 4 * kMiB, s1);
  ASSERT_TRUE(a.record_stream(p, s2));
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s2, p, 4 * kMiB, 300000, 9, nullptr));
  ASSERT_TRUE(a.free(p, s1));
  void* q = a.allocate(4 * kMiB, s1);  // not even on s1: s2 still uses p
  EXPECT_NE(p, q);
  std::memset(q, 1, 4 * kMiB);
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s2));
  EXPECT_EQ(p, a.allocate(4 * kMiB, s1));
  EXPECT_EQ(0, gpusim_busy_kernel_violations());
  cudaDeviceSynchronize();
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

TEST(DeviceAllocatorFront, ACaptureNeitherReusesNorCachesInTheFront) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  cudaStream_t s = non_blocking();
  void* p = cycled(a, 64 * 1024, s);
  void* q = a.allocate(64 * 1024, s);
  ASSERT_TRUE(a.free(p, s));  // cached in the front
  sync::capture_began(s);
  void* during = a.allocate(64 * 1024, s);
  EXPECT_NE(p, during);     // the graph may run on another stream
  EXPECT_TRUE(a.free(q, s));  // deferred, not cached
  EXPECT_FALSE(a.free(q, s));
  sync::capture_ended(s);
  DeviceStats st = a.stats();
  EXPECT_EQ(1u, st.deferred_frees);
  EXPECT_NE(q, a.allocate(64 * 1024, s));  // q waits for its fence
  if (during) a.free(during, s);
  cudaDeviceSynchronize();
  cudaStreamDestroy(s);
}

TEST(DeviceAllocatorFront, CachedBytesAreNotAllocatedAndThePeakIsExact) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  cudaStream_t s = non_blocking();
  // Small blocks: a large request that misses would take the stream's
  // large cached blocks into its held ranges (Note [Front caches]).
  constexpr uint64_t kKiB = 1024;
  void* x = cycled(a, 512 * kKiB, s);
  a.reset_peaks();
  ASSERT_TRUE(a.free(x, s));
  DeviceStats st = a.stats();
  EXPECT_EQ(0u, st.allocated);
  EXPECT_EQ(1u, st.pending_free);
  EXPECT_GE(st.reserved, 512 * kKiB);
  EXPECT_GE(a.unused_bytes(), 512 * kKiB);
  a.reset_peaks();
  void* y = a.allocate(256 * kKiB, s);      // another size: not x
  EXPECT_NE(x, y);
  EXPECT_EQ(x, a.allocate(512 * kKiB, s));  // the front: no lock, no note
  ASSERT_TRUE(a.free(x, s));
  st = a.stats();
  EXPECT_EQ(256 * kKiB, st.allocated);
  EXPECT_EQ(768 * kKiB, st.peak_allocated);  // x and y were live together
  EXPECT_EQ(st.allocations, st.frees + 1);
  cudaStreamDestroy(s);
}

TEST(DeviceAllocatorFront, AMissTrimAndThreadExitGiveTheCachedBlocksBack) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  cudaStream_t s = non_blocking();
  void* p = nullptr;
  // A thread caches 40 of the device's 64 MiB in its front and stays.
  std::atomic<int> step{0};
  std::thread t([&] {
    p = cycled(a, 40 * kMiB, s);
    EXPECT_TRUE(a.free(p, s));
    step = 1;
    while (step != 2) std::this_thread::yield();
  });
  while (step != 1) std::this_thread::yield();
  EXPECT_EQ(0u, a.stats().allocated);
  cudaDeviceSynchronize();
  // Another thread, no stream: the miss fences what the front caches and,
  // the GPU being done, reuses it rather than mapping 40 MiB more.
  EXPECT_EQ(p, a.allocate(40 * kMiB));
  EXPECT_LE(a.stats().reserved, 48 * kMiB);
  ASSERT_TRUE(a.free(p));
  step = 2;
  t.join();
  // A second thread caches and exits: trim then releases everything.
  std::thread([&] {
    void* q = cycled(a, 8 * kMiB, s);
    EXPECT_TRUE(a.free(q, s));
  }).join();
  EXPECT_EQ(1u, a.stats().pending_free);  // the exited thread's block, in StreamCache now
  cudaDeviceSynchronize();
  a.trim();
  DeviceStats st = a.stats();
  EXPECT_EQ(0u, st.reserved);
  EXPECT_EQ(0u, st.pending_free);
  EXPECT_EQ(st.allocations, st.frees);
  cudaStreamDestroy(s);
}

TEST(DeviceAllocatorFront, TrimReachesTheFrontOfALiveThread) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  cudaStream_t s = non_blocking();
  std::atomic<int> step{0};
  std::thread t([&] {
    void* q = cycled(a, 8 * kMiB, s);
    EXPECT_TRUE(a.free(q, s));
    step = 1;
    while (step != 2) std::this_thread::yield();
  });
  while (step != 1) std::this_thread::yield();
  cudaDeviceSynchronize();
  a.trim();
  EXPECT_EQ(0u, a.stats().reserved);
  step = 2;
  t.join();
  cudaStreamDestroy(s);
}

TEST(DeviceAllocatorFront, AForgottenStreamsFrontBlocksComeBackFenced) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  cudaStream_t s = non_blocking();
  void* p = cycled(a, 4 * kMiB, s);
  ASSERT_TRUE(a.free(p, s));
  a.forget_stream(s);
  sync::stream_destroying(s);
  cudaStreamDestroy(s);
  cudaDeviceSynchronize();
  // A new stream may get the same handle: it must not inherit p unfenced.
  const uint64_t reuses = a.stats().stream_reuses;
  cudaStream_t t = non_blocking();
  EXPECT_EQ(p, a.allocate(4 * kMiB, t));
  EXPECT_EQ(reuses, a.stats().stream_reuses);
  cudaStreamDestroy(t);
}

TEST(DeviceAllocatorFront, EightThreadsCycleCheckAndFreeAcrossThreads) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  constexpr int kThreads = 8, kRounds = 2000;
  std::vector<cudaStream_t> streams;
  for (int i = 0; i < kThreads; ++i) streams.push_back(non_blocking());
  // Each thread cycles a few sizes on its stream, checks its own blocks'
  // ranges, and hands one block per round to the next thread to free.
  std::vector<std::atomic<void*>> handed(kThreads);
  for (auto& h : handed) h = nullptr;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      cudaStream_t s = streams[i];
      for (int r = 0; r < kRounds; ++r) {
        size_t bytes = (1 + (r + i) % 4) * 4096;
        void* p = a.allocate(bytes, s);
        if (!p || !a.holds_range(p, bytes)) ++wrong;
        if (!a.free(p, s) || a.free(p, s) || a.holds_range(p, 1)) ++wrong;
        void* mine = a.allocate(bytes, s);
        void* expected = nullptr;
        if (!handed[(i + 1) % kThreads].compare_exchange_strong(expected, mine)) {
          if (!a.free(mine, s)) ++wrong;
        }
        if (void* theirs = handed[i].exchange(nullptr)) {
          if (!a.free(theirs)) ++wrong;
          if (a.free(theirs, s)) ++wrong;
        }
      }
    });
  for (auto& t : threads) t.join();
  for (auto& h : handed)
    if (void* p = h.exchange(nullptr)) EXPECT_TRUE(a.free(p));
  EXPECT_EQ(0, wrong.load());
  DeviceStats st = a.stats();
  EXPECT_EQ(0u, st.allocated);
  EXPECT_EQ(st.allocations, st.frees);
  cudaDeviceSynchronize();
  a.trim();
  EXPECT_EQ(0u, a.stats().reserved);
  for (cudaStream_t s : streams) cudaStreamDestroy(s);
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack
