// DeviceAllocator's stream-ordered side on the simulated device (64 MiB,
// two devices, set by CMake): reuse on the freeing stream at once and
// elsewhere only after its work; record_stream; frees during a graph
// capture deferred, with no event query, synchronization or mapping while
// it runs (the simulated runtime invalidates a global capture on any of
// them, as the real one does); peer access; the memory cap; block lookup.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "alloc/device_allocator.h"
#include "sync/stream_registry.h"
#include "alloc/process_allocators.h"
#include "cuda/driver_api.h"
#include "gpusim.h"
#include "sim_driver.h"

namespace gpuslack {
namespace alloc {
namespace {

using test_support::kMiB;
using test_support::non_blocking;

TEST(DeviceAllocatorStreams, ReuseIsImmediateOnTheFreeingStreamOnly) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  ASSERT_TRUE(a.ok());
  cudaStream_t s1 = non_blocking(), s2 = non_blocking();
  void* p = a.allocate(4 * kMiB, s1);
  ASSERT_NE(nullptr, p);
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s1, p, 4 * kMiB, 300000, 7, nullptr));
  ASSERT_TRUE(a.free(p, s1));
  EXPECT_FALSE(a.free(p, s1));  // twice
  // Same stream: the kernel's successor may have it at once.
  EXPECT_EQ(p, a.allocate(4 * kMiB, s1));
  EXPECT_EQ(1u, a.stats().stream_reuses);
  ASSERT_TRUE(a.free(p, s1));
  // Another stream, or no stream: not while s1's kernel runs.
  void* q = a.allocate(4 * kMiB, s2);
  void* r = a.allocate(4 * kMiB);
  EXPECT_NE(p, q);
  EXPECT_NE(p, r);
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s1));
  // Once s1 has passed the free, anyone may: the next miss takes it back.
  void* t = a.allocate(4 * kMiB, s2);
  EXPECT_EQ(p, t);
  EXPECT_EQ(0, gpusim_busy_kernel_violations());
  for (void* x : {q, r, t}) EXPECT_TRUE(a.free(x, s2));
  cudaDeviceSynchronize();
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

// See Note [Space held for an owner]: a large block freed on a stream serves a
// request of another size on that stream at once (split; the rest stays
// held), with no event and nothing mapped; never another stream while the
// freeing stream's kernel still writes it.
TEST(DeviceAllocatorStreams, AnySizeIsReusedAtOnceOnTheFreeingStreamOnly) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  ASSERT_TRUE(a.ok());
  cudaStream_t s1 = non_blocking(), s2 = non_blocking();
  char* p = static_cast<char*>(a.allocate(16 * kMiB, s1));
  ASSERT_NE(nullptr, p);
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s1, p, 16 * kMiB, 300000, 7, nullptr));
  ASSERT_TRUE(a.free(p, s1));
  const uint64_t reserved = a.stats().reserved, epochs = a.stats().epochs;
  // Another stream: never inside what s1 still uses.
  char* q = static_cast<char*>(a.allocate(6 * kMiB, s2));
  ASSERT_NE(nullptr, q);
  EXPECT_TRUE(q + 6 * kMiB <= p || q >= p + 16 * kMiB);
  const uint64_t after_q = a.stats().reserved;
  EXPECT_GT(after_q, reserved);
  // s1: two smaller blocks out of the 16 MiB it freed, nothing mapped, no event.
  char* r = static_cast<char*>(a.allocate(5 * kMiB, s1));
  char* t = static_cast<char*>(a.allocate(9 * kMiB, s1));
  ASSERT_NE(nullptr, r);
  ASSERT_NE(nullptr, t);
  EXPECT_TRUE(r >= p && r + 5 * kMiB <= p + 16 * kMiB);
  EXPECT_TRUE(t >= p && t + 9 * kMiB <= p + 16 * kMiB);
  EXPECT_EQ(after_q, a.stats().reserved);
  EXPECT_EQ(2u, a.stats().stream_reuses);
  EXPECT_GE(a.stats().epochs, epochs);
  // Freed again on s1, the pieces merge: 14 MiB in one piece comes back.
  ASSERT_TRUE(a.free(r, s1));
  ASSERT_TRUE(a.free(t, s1));
  char* u = static_cast<char*>(a.allocate(14 * kMiB, s1));
  EXPECT_TRUE(u >= p && u + 14 * kMiB <= p + 16 * kMiB);
  EXPECT_EQ(after_q, a.stats().reserved);
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s1));
  EXPECT_EQ(0, gpusim_busy_kernel_violations());
  EXPECT_TRUE(a.free(u, s1));
  EXPECT_TRUE(a.free(q, s2));
  cudaDeviceSynchronize();
  // Everything comes back to everyone once fenced: an explicit trim
  // releases all of it.
  a.trim();
  EXPECT_EQ(0u, a.stats().reserved);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

// See Note [Held ranges reach everyone]: once the freeing stream's work is
// done, what it held serves another stream at the next miss, without mapping.
TEST(DeviceAllocatorStreams, HeldMemoryReachesOtherStreamsOnceFenced) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  ASSERT_TRUE(a.ok());
  cudaStream_t s1 = non_blocking(), s2 = non_blocking();
  void* p = a.allocate(40 * kMiB, s1);
  ASSERT_NE(nullptr, p);
  ASSERT_TRUE(a.free(p, s1));  // past 32 MiB freed: fenced at once
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s1));
  const uint64_t reserved = a.stats().reserved;
  void* q = a.allocate(24 * kMiB, s2);
  ASSERT_NE(nullptr, q);
  EXPECT_GE(q, p);
  EXPECT_LE(static_cast<char*>(q) + 24 * kMiB, static_cast<char*>(p) + 40 * kMiB);
  EXPECT_EQ(reserved, a.stats().reserved);
  EXPECT_TRUE(a.free(q, s2));
  cudaDeviceSynchronize();
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

// See Note [Others' fenced ranges before new space] in held_fences.h: once
// s1's fence has completed, what s1 held serves s2's next large request
// that its own cache cannot, before any free range does; before, s2 split
// the free range another block needed, and that block mapped more.
// What the two tests below start from: a free, mapped 10 MiB range (z:
// stream-less, fenced and taken back), a live block after it, then 40 MiB
// on s1 (p) and another live block (end); `more` allocates before z is
// freed. Then s1 frees its 40 MiB (held, fenced: past 32 MiB) and takes 34
// back: it holds the last 6 MiB.
struct SixMiBHeldByS1 {
  void *z, *spacer, *end;
  char* p;
};
void hold_six_mib_on_s1(DeviceAllocator& a, cudaStream_t s1, const std::function<void()>& more, SixMiBHeldByS1* out) {
  out->z = a.allocate(10 * kMiB);
  out->spacer = a.allocate(2 * kMiB);
  out->p = static_cast<char*>(a.allocate(40 * kMiB, s1));
  out->end = a.allocate(2 * kMiB);
  more();
  ASSERT_NE(nullptr, out->z);
  ASSERT_NE(nullptr, out->spacer);
  ASSERT_NE(nullptr, out->p);
  ASSERT_EQ(out->p + 40 * kMiB, out->end);
  ASSERT_TRUE(a.free(out->z));
  a.fence_frees();
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  a.take_back_completed();
  ASSERT_TRUE(a.free(out->p, s1));
  ASSERT_EQ(out->p, a.allocate(34 * kMiB, s1));
}

TEST(DeviceAllocatorStreams, OtherStreamsFencedRangesServeBeforeFreeSpace) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  ASSERT_TRUE(a.ok());
  cudaStream_t s1 = non_blocking(), s2 = non_blocking();
  SixMiBHeldByS1 scene;
  ASSERT_NO_FATAL_FAILURE(hold_six_mib_on_s1(a, s1, [] {}, &scene));
  void *z = scene.z, *spacer = scene.spacer, *end = scene.end;
  char *p = scene.p, *q = scene.p;
  // s1's fence completes.
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s1));
  const uint64_t reserved = a.stats().reserved;
  // s2's 5 MiB: in s1's 6 MiB, not in the 10 MiB range ...
  char* r = static_cast<char*>(a.allocate(5 * kMiB, s2));
  ASSERT_NE(nullptr, r);
  EXPECT_GE(r, p + 34 * kMiB);
  EXPECT_LE(r + 5 * kMiB, p + 40 * kMiB);
  // ... which a 10 MiB block then finds whole: nothing mapped.
  void* t = a.allocate(10 * kMiB);
  EXPECT_EQ(z, t);
  EXPECT_EQ(reserved, a.stats().reserved);
  for (void* x : {t, spacer, end}) EXPECT_TRUE(a.free(x));
  EXPECT_TRUE(a.free(q, s1));
  EXPECT_TRUE(a.free(r, s2));
  cudaDeviceSynchronize();
  EXPECT_EQ(0, gpusim_busy_kernel_violations());
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

// The same on the cached path: s2 holds a range of its own, too small, and
// its request reads the one pool (Note [One pool for an owner's reuse] in
// block_manager.h) with s1's finished range in it.
TEST(DeviceAllocatorStreams, OtherStreamsFencedRangesJoinTheOnePool) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  ASSERT_TRUE(a.ok());
  cudaStream_t s1 = non_blocking(), s2 = non_blocking();
  char* h = nullptr;
  void* end2 = nullptr;
  SixMiBHeldByS1 scene;
  ASSERT_NO_FATAL_FAILURE(hold_six_mib_on_s1(
      a, s1,
      [&] {
        h = static_cast<char*>(a.allocate(3 * kMiB, s2));
        end2 = a.allocate(2 * kMiB);
      },
      &scene));
  ASSERT_NE(nullptr, h);
  ASSERT_NE(nullptr, end2);
  void *z = scene.z, *spacer = scene.spacer, *end = scene.end;
  char *p = scene.p, *q = scene.p;
  ASSERT_TRUE(a.free(h, s2));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  const uint64_t reserved = a.stats().reserved, reuses = a.stats().stream_reuses;
  char* r = static_cast<char*>(a.allocate(5 * kMiB, s2));
  ASSERT_NE(nullptr, r);
  EXPECT_EQ(reuses + 1, a.stats().stream_reuses);  // the cached path served it
  EXPECT_GE(r, p + 34 * kMiB);
  EXPECT_LE(r + 5 * kMiB, p + 40 * kMiB);
  void* t = a.allocate(10 * kMiB);
  EXPECT_EQ(z, t);
  EXPECT_EQ(reserved, a.stats().reserved);
  for (void* x : {t, spacer, end, end2}) EXPECT_TRUE(a.free(x));
  EXPECT_TRUE(a.free(q, s1));
  EXPECT_TRUE(a.free(r, s2));
  cudaDeviceSynchronize();
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

// See Note [Fences off the allocation path] in held_fences.h: a stream that
// keeps merging what it cached into its held ranges on the allocation path
// (large requests of changing sizes, as a decode loop's growing caches make)
// still fences every 32 MiB, but its allocations record at most a burst and
// one per 48 of them; its large frees record the rest.
TEST(DeviceAllocatorStreams, FencesTheAllocationPathLeavesDueAreRecordedByTheNextLargeFree) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  ASSERT_TRUE(a.ok());
  cudaStream_t s1 = non_blocking();
  void* big = a.allocate(40 * kMiB, s1);
  ASSERT_NE(nullptr, big);
  // s1 busy throughout: no fence completes, so what s1 holds stays its own
  // (over 32 MiB) and each fence replaces the one pending.
  void* busy = a.allocate(64 * 1024, s1);
  ASSERT_NE(nullptr, busy);
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s1, busy, 64 * 1024, 300000, 5, nullptr));
  ASSERT_TRUE(a.free(big, s1));  // s1 holds 40 MiB: past the fence threshold
  const uint64_t reserved = a.stats().reserved;
  const int kSteps = 400;
  long by_allocations = 0, by_frees = 0;
  for (int i = 0; i < kSteps; ++i) {
    // 3 and 4 MiB in turn: never the size just freed, so each allocation
    // merges the block freed before it into what s1 holds.
    long before = gpusim_calls("cudaEventRecord");
    void* p = a.allocate((i % 2 ? 3 : 4) * kMiB, s1);
    ASSERT_NE(nullptr, p);
    by_allocations += gpusim_calls("cudaEventRecord") - before;
    before = gpusim_calls("cudaEventRecord");
    ASSERT_TRUE(a.free(p, s1));
    by_frees += gpusim_calls("cudaEventRecord") - before;
  }
  // About 3.5 MiB merged a step: some 43 fences due in all, none lost.
  EXPECT_LE(by_allocations, static_cast<long>(HeldFences::kFenceBurst + kSteps / HeldFences::kAllocationsPerFence + 1));
  EXPECT_GE(by_frees, 20);
  EXPECT_GE(by_allocations + by_frees, 40);
  EXPECT_EQ(reserved, a.stats().reserved);  // served from what s1 holds throughout
  ASSERT_TRUE(a.free(busy, s1));
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s1));
  EXPECT_EQ(0, gpusim_busy_kernel_violations());
  cudaStreamDestroy(s1);
}

// See Note [Waiting instead of mapping]: stream-less frees behind a finished
// device come back to the next allocation, which waits for their fence
// (bounded) rather than mapping more: a loop maps its first step only.
TEST(DeviceAllocatorStreams, ALoopBehindTheDeviceMapsItsFirstStepOnly) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  ASSERT_TRUE(a.ok());
  uint64_t first = 0;
  for (int i = 0; i < 20; ++i) {
    void* x = a.allocate(20 * kMiB);
    void* y = a.allocate(20 * kMiB);
    ASSERT_NE(nullptr, x);
    ASSERT_NE(nullptr, y);
    ASSERT_EQ(cudaSuccess, cudaMemsetAsync(x, 1, 20 * kMiB, nullptr));
    ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
    ASSERT_TRUE(a.free(x));
    ASSERT_TRUE(a.free(y));
    if (i == 0) first = a.stats().reserved;
  }
  DeviceStats s = a.stats();
  EXPECT_EQ(first, s.peak_reserved);
  EXPECT_LE(s.peak_reserved, 48 * kMiB);
  EXPECT_EQ(0u, s.oom_retries);
}

TEST(DeviceAllocatorStreams, EightThreadsFourStreamsNeverShareBusyMemory) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  ASSERT_TRUE(a.ok());
  cudaStream_t streams[4];
  for (auto& s : streams) s = non_blocking();
  long before = gpusim_busy_kernel_violations();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      cudaStream_t mine = streams[t % 4], other = streams[(t + 1) % 4];
      for (int i = 0; i < 6; ++i) {
        size_t bytes = (i % 2 ? 64 : 3 * 1024) * 1024;
        void* p = a.allocate(bytes, mine);
        ASSERT_NE(nullptr, p);
        ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(mine, p, bytes, 15000, 0xBEEF00u + t, nullptr));
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the kernel has started
        ASSERT_TRUE(a.free(p, mine));
        // From another stream, written by that stream at once: if it were
        // a block a kernel of another stream still uses, the kernel would
        // see the write. (A block freed on `other` itself may come back:
        // its memset then runs after that stream's kernel, legitimately.)
        void* q = a.allocate(bytes, other);
        ASSERT_NE(nullptr, q);
        ASSERT_EQ(cudaSuccess, cudaMemsetAsync(q, 0, bytes, other));
        ASSERT_TRUE(a.free(q, other));
      }
    });
  for (auto& th : threads) th.join();
  cudaDeviceSynchronize();
  EXPECT_EQ(0, gpusim_busy_kernel_violations() - before);
  for (auto& s : streams) cudaStreamDestroy(s);
}

TEST(DeviceAllocatorStreams, RecordStreamHoldsTheBlockForThatStream) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  ASSERT_TRUE(a.ok());
  // s2 is not in the registry (as PyTorch's streams are not): only
  // record_stream tells the allocator about it.
  cudaStream_t s1 = non_blocking(), s2 = nullptr;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  void* p = a.allocate(4 * kMiB, s1);
  ASSERT_TRUE(a.record_stream(p, s2));
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s2, p, 4 * kMiB, 300000, 9, nullptr));
  ASSERT_TRUE(a.free(p, s1));
  void* q = a.allocate(4 * kMiB, s1);  // not even on s1: s2 still uses p
  EXPECT_NE(p, q);
  std::memset(q, 1, 4 * kMiB);
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s2));
  EXPECT_EQ(p, a.allocate(4 * kMiB, s1));
  EXPECT_EQ(0, gpusim_busy_kernel_violations());
  int local = 0;
  EXPECT_FALSE(a.record_stream(&local, s2));
  cudaDeviceSynchronize();
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

// A global-mode capture is invalidated by any event query, event
// synchronization, cudaMalloc or cudaFree from any thread while it runs.
// `during` runs while `s` captures; returns what cudaStreamEndCapture said.
template <typename Fn>
cudaError_t capture_around(cudaStream_t s, bool tell_allocator, Fn during) {
  EXPECT_EQ(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  if (tell_allocator) sync::capture_began(s);
  during();
  cudaGraph_t graph = nullptr;
  cudaError_t r = cudaStreamEndCapture(s, &graph);
  if (tell_allocator) sync::capture_ended(s);
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();
  return r;
}

TEST(DeviceAllocatorStreams, FreesDuringACaptureWaitForItsEnd) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  ASSERT_TRUE(a.ok());
  cudaStream_t s = non_blocking(), cap = nullptr;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking));
  void* big = a.allocate(4 * kMiB);
  void* small = a.allocate(64 * 1024, s);
  void* more = nullptr;
  void* mapped_small = nullptr;
  uint64_t mapped_before = a.stats().granules_mapped;
  // GPU work that outlives the capture: the fence recorded after it cannot
  // pass before this ends.
  void* scratch = nullptr;
  ASSERT_EQ(cudaSuccess, cudaMalloc(&scratch, 4096));
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(nullptr, scratch, 4096, 100000, 3, nullptr));
  cudaError_t r = capture_around(cap, true, [&] {
    EXPECT_TRUE(a.free(big));
    EXPECT_TRUE(a.free(small, s));
    more = a.allocate(8 * kMiB);             // needs a map: left to the runtime
    mapped_small = a.allocate(4096);         // fits the mapped small-pool page
    EXPECT_EQ(0u, a.trim());                 // no unmapping either
  });
  EXPECT_EQ(cudaSuccess, r) << "the allocator invalidated the capture";
  EXPECT_EQ(nullptr, more);
  EXPECT_NE(nullptr, mapped_small);
  DeviceStats st = a.stats();
  EXPECT_EQ(2u, st.deferred_frees);
  EXPECT_EQ(1u, st.capture_fallbacks);
  EXPECT_EQ(mapped_before, st.granules_mapped);
  // After the capture the deferred frees are fenced like any other: the
  // next miss fences them (and cannot have them yet), and once the GPU has
  // passed the fence, the miss after takes `big` back.
  void* first = a.allocate(4 * kMiB);
  EXPECT_NE(big, first);
  cudaDeviceSynchronize();
  EXPECT_EQ(big, a.allocate(4 * kMiB));
  cudaFree(scratch);
  cudaStreamDestroy(s);
  cudaStreamDestroy(cap);
}

// See Note [Others' fenced ranges before new space] in held_fences.h:
// during a capture a large request asks no other stream's fence (the
// query would invalidate the capture), so what s1 holds stays s1's until
// the capture has ended.
TEST(DeviceAllocatorStreams, NoOtherStreamsFenceIsAskedDuringACapture) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  ASSERT_TRUE(a.ok());
  cudaStream_t s1 = non_blocking(), s2 = non_blocking(), cap = nullptr;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking));
  char* p = static_cast<char*>(a.allocate(40 * kMiB, s1));
  void* z = a.allocate(10 * kMiB);
  ASSERT_NE(nullptr, p);
  ASSERT_NE(nullptr, z);
  ASSERT_TRUE(a.free(z));
  a.fence_frees();
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  a.take_back_completed();
  ASSERT_TRUE(a.free(p, s1));  // held, fenced (past 32 MiB)
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s1));  // and the fence completed
  const uint64_t reserved = a.stats().reserved;
  char* r = nullptr;
  void* more = nullptr;
  cudaError_t e = capture_around(cap, true, [&] {
    r = static_cast<char*>(a.allocate(5 * kMiB, s2));  // the free 10 MiB
    more = a.allocate(20 * kMiB);  // only s1's range would hold it: left to the runtime
  });
  EXPECT_EQ(cudaSuccess, e) << "the allocator invalidated the capture";
  ASSERT_NE(nullptr, r);
  EXPECT_TRUE(r + 5 * kMiB <= p || r >= p + 40 * kMiB);
  EXPECT_EQ(nullptr, more);
  // Once it has ended, s2's next large request takes s1's range, unmapped nothing.
  char* t = static_cast<char*>(a.allocate(20 * kMiB, s2));
  EXPECT_TRUE(t >= p && t + 20 * kMiB <= p + 40 * kMiB);
  EXPECT_EQ(reserved, a.stats().reserved);
  EXPECT_TRUE(a.free(r, s2));
  EXPECT_TRUE(a.free(t, s2));
  cudaDeviceSynchronize();
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
  cudaStreamDestroy(cap);
}

TEST(DeviceAllocatorStreams, ControlAnAllocatorBlindToTheCaptureBreaksIt) {
  // The same frees and allocations, the capture not reported: the miss
  // queries events and the simulated runtime invalidates the capture, as
  // the real one does. (And a native cudaMalloc does too.)
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  ASSERT_TRUE(a.ok());
  cudaStream_t cap = nullptr;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking));
  void* big = a.allocate(4 * kMiB);
  a.free(big);
  a.trim();  // the fenced epoch is queried by the miss below
  void* again = a.allocate(4 * kMiB);
  a.free(again);
  cudaError_t r = capture_around(cap, false, [&] { a.free(a.allocate(8 * kMiB)); });
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, r);
  void* native = nullptr;
  r = capture_around(cap, false, [&] { cudaMalloc(&native, 4096); });
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, r);
  cudaDeviceSynchronize();
  cudaStreamDestroy(cap);
}

TEST(DeviceAllocatorStreams, DestroyedStreamsGiveTheirCacheBack) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  cudaStream_t s = non_blocking();
  void* p = a.allocate(4 * kMiB, s);
  ASSERT_TRUE(a.free(p, s));
  a.forget_stream(s);
  sync::stream_destroying(s);
  cudaStreamDestroy(s);
  cudaDeviceSynchronize();
  // A new stream may get the same handle: it must not inherit p unfenced;
  // p comes back through the fence instead.
  cudaStream_t t = non_blocking();
  EXPECT_EQ(p, a.allocate(4 * kMiB, t));
  EXPECT_EQ(0u, a.stats().stream_reuses);
  cudaStreamDestroy(t);
}

TEST(DeviceAllocatorStreams, TheCapFailsAllocationsAsOutOfMemory) {
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  a.set_limit(8 * kMiB);
  EXPECT_EQ(nullptr, a.allocate(16 * kMiB));
  EXPECT_EQ(1u, a.stats().failed_allocations);
  void* p = a.allocate(6 * kMiB);
  EXPECT_NE(nullptr, p);
  EXPECT_LE(a.stats().reserved, 8 * kMiB);
  a.set_limit(0);
  EXPECT_NE(nullptr, a.allocate(16 * kMiB));
}

TEST(DeviceAllocatorStreams, BlockOfFindsTheBlockFromAnyInteriorPointer) {
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  char* big = static_cast<char*>(a.allocate(3 * kMiB));
  char* small = static_cast<char*>(a.allocate(1000));
  size_t size = 0;
  EXPECT_EQ(big, a.block_of(big + 12345, &size));
  EXPECT_EQ(3 * kMiB, size);
  EXPECT_EQ(small, a.block_of(small + 999, &size));
  EXPECT_EQ(1024u, size);
  EXPECT_EQ(nullptr, a.block_of(small + 1024, &size));  // free space of the page
  EXPECT_EQ(0u, size);
  a.free(big);
  EXPECT_EQ(nullptr, a.block_of(big, &size));  // freed
}

TEST(DeviceAllocatorStreams, PeersGetEveryMappingNowAndLater) {
  ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
  DeviceAllocator* a = device_allocator(0);
  ASSERT_NE(nullptr, a);
  void* p = a->allocate(4 * kMiB);
  auto access = [](int device, void* at) {
    CUmemLocation loc{};
    loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
    loc.id = device;
    unsigned long long flags = 0;
    EXPECT_EQ(CUDA_SUCCESS, cuMemGetAccess(&flags, &loc, reinterpret_cast<CUdeviceptr>(at)));
    return flags;
  };
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_NONE, access(1, p));
  peer_access_enabled(1, 0);
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, access(1, p));
  void* later = a->allocate(16 * kMiB);  // new granules
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, access(1, later));
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, access(0, later));
  // Enabled before device 1's allocator exists: granted when it is made.
  peer_access_enabled(0, 1);
  ASSERT_EQ(cudaSuccess, cudaSetDevice(1));
  DeviceAllocator* b = device_allocator(1);
  ASSERT_NE(nullptr, b);
  void* q = b->allocate(4 * kMiB);
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, access(0, q));
  cudaSetDevice(0);
}

// See Note [A stream's small blocks at any size]: a small block freed on a
// stream at one size serves a smaller request on that stream at once, from
// its start, with no event and no new page; the rest stays the stream's,
// freed (range checks, a second free), and another stream never gets it
// while the freeing stream's kernel runs; during a capture, nothing of it.
TEST(DeviceAllocatorStreams, ASmallBlockServesASmallerRequestOnItsStreamWithoutANewPage) {
  constexpr uint64_t kKiB = 1024;
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  ASSERT_TRUE(a.ok());
  cudaStream_t s1 = non_blocking(), s2 = non_blocking(), cap = nullptr;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking));
  // One small-pool page, full.
  char* p = static_cast<char*>(a.allocate(kMiB, s1));
  char* q = static_cast<char*>(a.allocate(kMiB, s1));
  ASSERT_TRUE(p && q);
  ASSERT_EQ(p + kMiB, q);
  const uint64_t reserved = a.stats().reserved;
  ASSERT_EQ(2 * kMiB, reserved);
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s1, p, kMiB, 300000, 7, nullptr));
  ASSERT_TRUE(a.free(p, s1));
  // During a capture the stream's blocks serve nothing (the graph may run
  // on another stream), and nothing is mapped: the runtime's turn.
  void* captured = reinterpret_cast<void*>(1);
  EXPECT_EQ(cudaSuccess, capture_around(cap, true, [&] { captured = a.allocate(256 * kKiB, s1); }));
  EXPECT_EQ(nullptr, captured);
  const DeviceStats before = a.stats();
  char* r = static_cast<char*>(a.allocate(256 * kKiB - 100, s1));
  EXPECT_EQ(p, r);
  const DeviceStats after = a.stats();
  EXPECT_EQ(reserved, after.reserved);
  EXPECT_EQ(before.epochs, after.epochs);  // no event
  EXPECT_EQ(before.stream_reuses + 1, after.stream_reuses);
  EXPECT_TRUE(a.holds_range(r, 256 * kKiB - 100));
  EXPECT_FALSE(a.holds_range(r, 256 * kKiB - 99));
  // The rest: freed, cached for s1.
  size_t size = 0;
  EXPECT_FALSE(a.holds_range(p + 256 * kKiB, 1));
  EXPECT_EQ(nullptr, a.block_of(p + 300 * kKiB, &size));
  EXPECT_FALSE(a.free(p + 256 * kKiB, s1));  // freed already
  // Another stream: never inside what s1's kernel still uses.
  char* t = static_cast<char*>(a.allocate(768 * kKiB, s2));
  ASSERT_NE(nullptr, t);
  EXPECT_TRUE(t >= p + kMiB || t + 768 * kKiB <= p);
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s1));
  EXPECT_EQ(0, gpusim_busy_kernel_violations());
  for (void* x : {static_cast<void*>(r), static_cast<void*>(q), static_cast<void*>(t)}) EXPECT_TRUE(a.free(x, s1));
  cudaDeviceSynchronize();
  for (cudaStream_t x : {s1, s2, cap}) cudaStreamDestroy(x);
}

// See Note [A stream's small blocks at any size]: blocks a stream freed one
// after another join, with the free range beside them, into one larger
// block for it, on the page they are in; a joined block's start is no
// block's any more.
TEST(DeviceAllocatorStreams, AStreamsAdjacentSmallBlocksJoinWithTheFreeSpaceBeside) {
  constexpr uint64_t kKiB = 1024;
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0);
  ASSERT_TRUE(a.ok());
  cudaStream_t s = non_blocking();
  // One page: a | b | c, 512 KiB each, and 512 KiB free after c.
  char* x = static_cast<char*>(a.allocate(512 * kKiB, s));
  char* b = static_cast<char*>(a.allocate(512 * kKiB, s));
  char* c = static_cast<char*>(a.allocate(512 * kKiB, s));
  ASSERT_TRUE(x && b && c);
  ASSERT_EQ(b + 512 * kKiB, c);
  const uint64_t reserved = a.stats().reserved;
  // Still in use by s when freed: only s may have them now.
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s, b, kMiB, 300000, 7, nullptr));
  ASSERT_TRUE(a.free(c, s));
  ASSERT_TRUE(a.free(b, s));
  // 1 MiB: no page has it free; b and c together do.
  char* j = static_cast<char*>(a.allocate(kMiB, s));
  EXPECT_EQ(b, j);
  EXPECT_EQ(reserved, a.stats().reserved);
  EXPECT_FALSE(a.free(c, s));  // inside j now
  EXPECT_TRUE(a.holds_range(c, 512 * kKiB));
  ASSERT_TRUE(a.free(j, s));
  char* k = static_cast<char*>(a.allocate(kMiB, s));  // its own size: j back
  EXPECT_EQ(j, k);
  ASSERT_TRUE(a.free(k, s));
  // Another size: k's start again (with the free 512 KiB after it, the
  // extent is 1.5 MiB), its last 512 bytes still cached; no new page.
  char* m = static_cast<char*>(a.allocate(kMiB - 512, s));
  EXPECT_EQ(b, m);
  EXPECT_EQ(reserved, a.stats().reserved);
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  EXPECT_EQ(0, gpusim_busy_kernel_violations());
  for (void* p : {static_cast<void*>(x), static_cast<void*>(m)}) EXPECT_TRUE(a.free(p, s));
  cudaDeviceSynchronize();
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack
