// The Stager on the simulated device: staged copies give the bytes the
// runtime's own copies give (every direction, sizes from 1 B to 256 MiB,
// unaligned ends, eight threads on four streams), refuse a copy past the
// end of its allocation whole, with nothing written, keep what an application
// can observe of the driver's stream drain (device->host copies and host
// functions it enqueued earlier), never drain for a kernel alone, return
// device->host data when the runtime would, and wait for staging memory,
// then recover, when the budget is used up.
#include "stage/staged_copy.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "cuda/pointer_kind.h"
#include "gpusim.h"
#include "stage/host_work.h"

namespace gpuslack {
namespace stage {
namespace {

constexpr size_t kKiB = 1024, kMiB = 1024 * 1024;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// The runtime's own calls, as interpose/routes_copies.inc makes them.
cudaError_t native(const CopyCall& c, void*) {
  if (c.height > 1) {
    return c.sync_api ? cudaMemcpy2D(c.dst, c.dpitch, c.src, c.spitch, c.width, c.height, c.kind)
                      : cudaMemcpy2DAsync(c.dst, c.dpitch, c.src, c.spitch, c.width, c.height, c.kind, c.stream);
  }
  return c.sync_api ? cudaMemcpy(c.dst, c.src, c.width, c.kind)
                    : cudaMemcpyAsync(c.dst, c.src, c.width, c.kind, c.stream);
}

CopyCall call(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s, bool sync_api = false) {
  CopyCall c = CopyCall::linear(dst, src, n, kind, s);
  c.sync_api = sync_api;
  return c;
}

StagerConfig config(size_t chunk = 256 * kKiB, size_t budget = 8 * kMiB) {
  StagerConfig c;
  c.enabled = true;
  c.chunk_bytes = chunk;
  c.budget_bytes = budget;
  c.threshold_bytes = 0;
  return c;
}

// Random bytes (splitmix64: cheap enough for 256 MiB under the sanitizers).
std::vector<char> random_bytes(size_t n, unsigned seed) {
  std::vector<char> v(n);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x = next();
    std::memcpy(v.data() + i, &x, 8);
  }
  for (; i < n; ++i) v[i] = static_cast<char>(next());
  return v;
}

// The hooks invalidate gpuslack's pointer-kind cache whenever memory is
// allocated or freed; these tests call the runtime directly, so they do it
// themselves (a freed pinned range's address may come back as pageable).
void free_host(void* p) {
  cudaFreeHost(p);
  cuda::invalidate_pointer_kinds();
}

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t n) { EXPECT_EQ(cudaSuccess, cudaMalloc(&p, n)); }
  ~DeviceBuffer() {
    cudaFree(p);
    cuda::invalidate_pointer_kinds();
  }
  char* at(size_t off) const { return static_cast<char*>(p) + off; }
};

// Every direction and API at one size, with unaligned starts: the staged
// copy must land the bytes the runtime's own copy lands.
void round_trip(Stager& st, size_t n, size_t src_off, size_t dst_off, cudaStream_t s, unsigned seed) {
  SCOPED_TRACE(::testing::Message() << "n=" << n << " src_off=" << src_off << " dst_off=" << dst_off);
  std::vector<char> host = random_bytes(n + src_off, seed);
  DeviceBuffer staged(n + 64), native_dev(n + 64);
  // H2D, asynchronous: staged against native.
  ASSERT_EQ(cudaSuccess, st.copy(call(staged.at(dst_off), host.data() + src_off, n, cudaMemcpyHostToDevice, s),
                                 &native, nullptr));
  ASSERT_EQ(cudaSuccess, cudaMemcpyAsync(native_dev.at(dst_off), host.data() + src_off, n, cudaMemcpyHostToDevice, s));
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  ASSERT_EQ(0, std::memcmp(staged.at(dst_off), native_dev.at(dst_off), n));  // device memory is host memory here
  ASSERT_EQ(0, std::memcmp(staged.at(dst_off), host.data() + src_off, n));
  // D2H, asynchronous (returns when the data is there) and synchronous.
  std::vector<char> back(n + dst_off + 8, 0), back_sync(n + dst_off + 8, 0);
  ASSERT_EQ(cudaSuccess, st.copy(call(back.data() + dst_off, staged.at(dst_off), n, cudaMemcpyDeviceToHost, s),
                                 &native, nullptr));
  ASSERT_EQ(0, std::memcmp(back.data() + dst_off, host.data() + src_off, n));
  ASSERT_EQ(cudaSuccess, st.copy(call(back_sync.data() + dst_off, staged.at(dst_off), n, cudaMemcpyDefault, nullptr,
                                      /*sync_api=*/true),
                                 &native, nullptr));
  ASSERT_EQ(0, std::memcmp(back_sync.data() + dst_off, host.data() + src_off, n));
  // Nothing written outside the copy.
  for (size_t i = 0; i < dst_off; ++i) ASSERT_EQ(0, back[i]);
  for (size_t i = dst_off + n; i < back.size(); ++i) ASSERT_EQ(0, back[i]);
  // H2D, synchronous, over the first copy.
  std::vector<char> again = random_bytes(n, seed + 1);
  ASSERT_EQ(cudaSuccess,
            st.copy(call(staged.at(dst_off), again.data(), n, cudaMemcpyHostToDevice, nullptr, true), &native, nullptr));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  ASSERT_EQ(0, std::memcmp(staged.at(dst_off), again.data(), n));
}

TEST(StagedCopy, SameBytesAsTheRuntimeAtEverySize) {
  Stager st(config(256 * kKiB, 64 * kMiB));
  cudaStream_t s;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t sizes[] = {1, 2, 3, 7, 64, 4095, 4096, 4097, 65537, 256 * kKiB - 1, 256 * kKiB, 256 * kKiB + 1,
                          kMiB + 3, 3 * kMiB + 5, 17 * kMiB + 11};
  unsigned seed = 1;
  for (size_t n : sizes)
    for (size_t so : {0, 1, 3})
      for (size_t doff : {0, 5}) round_trip(st, n, so, doff, s, seed++);
  StagingStats stats = st.stats();
  EXPECT_EQ(stats.h2d.seen, stats.h2d.staged);
  cudaStreamDestroy(s);
}

// Once at 256 MiB, both directions through staging (the D2H way forced:
// the chooser might leave it to the runtime), unaligned at both ends.
TEST(StagedCopy, SameBytesAt256MiB) {
  StagerConfig cfg = config(kMiB, 64 * kMiB);
  cfg.d2h_way = StagerConfig::D2hWay::kStaged;
  Stager st(cfg);
  const size_t n = 256 * kMiB - 5;
  std::vector<char> host = random_bytes(n + 1, 42), back(n + 3, 0);
  DeviceBuffer dev(n + 64);
  ASSERT_EQ(cudaSuccess, st.copy(call(dev.at(3), host.data() + 1, n, cudaMemcpyHostToDevice, nullptr), &native, nullptr));
  ASSERT_EQ(cudaSuccess, st.copy(call(back.data() + 3, dev.at(3), n, cudaMemcpyDeviceToHost, nullptr), &native, nullptr));
  EXPECT_EQ(0, std::memcmp(back.data() + 3, host.data() + 1, n));
  StagingStats stats = st.stats();
  EXPECT_EQ(1u, stats.h2d.staged);
  EXPECT_EQ(1u, stats.d2h.staged);
}

TEST(StagedCopy, TwoDimensionalCopiesStageByRows) {
  Stager st(config(64 * kKiB));
  const size_t w = 1000, h = 300, spitch = 1024 + 7, dpitch = 1536;
  std::vector<char> host = random_bytes(spitch * h, 9);
  DeviceBuffer dev(dpitch * h);
  CopyCall c = call(dev.p, host.data(), w, cudaMemcpyHostToDevice, nullptr);
  c.height = h;
  c.spitch = spitch;
  c.dpitch = dpitch;
  ASSERT_EQ(cudaSuccess, st.copy(c, &native, nullptr));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  for (size_t r = 0; r < h; ++r) ASSERT_EQ(0, std::memcmp(dev.at(r * dpitch), host.data() + r * spitch, w)) << r;
  std::vector<char> back(spitch * h, 0);
  CopyCall d = call(back.data(), dev.p, w, cudaMemcpyDeviceToHost, nullptr);
  d.height = h;
  d.spitch = dpitch;
  d.dpitch = spitch;
  ASSERT_EQ(cudaSuccess, st.copy(d, &native, nullptr));
  for (size_t r = 0; r < h; ++r) {
    ASSERT_EQ(0, std::memcmp(back.data() + r * spitch, host.data() + r * spitch, w)) << r;
    for (size_t i = w; i < spitch; ++i) ASSERT_EQ(0, back[r * spitch + i]);
  }
  EXPECT_EQ(1u, st.stats().h2d.staged);
}

TEST(StagedCopy, EightThreadsOnFourStreams) {
  Stager st(config(128 * kKiB, 4 * kMiB));  // small budget: blocks are recycled all the time
  cudaStream_t streams[4];
  for (cudaStream_t& s : streams) ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t + 100);
      DeviceBuffer dev(3 * kMiB + 64);
      for (int i = 0; i < 24; ++i) {
        cudaStream_t s = streams[(t + i) % 4];
        size_t n = 1 + rng() % (i % 3 == 0 ? 3 * kMiB : 64 * kKiB);
        size_t off = rng() % 8;
        std::vector<char> host = random_bytes(n, t * 1000 + i), back(n, 0);
        if (st.copy(call(dev.at(off), host.data(), n, cudaMemcpyHostToDevice, s), &native, nullptr) != cudaSuccess ||
            st.copy(call(back.data(), dev.at(off), n, cudaMemcpyDeviceToHost, s), &native, nullptr) != cudaSuccess ||
            std::memcmp(back.data(), host.data(), n) != 0)
          ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(0, failures.load());
  StagingStats stats = st.stats();
  EXPECT_EQ(8u * 24, stats.h2d.seen);
  EXPECT_LE(stats.pinned_bytes, 4 * kMiB);
  for (cudaStream_t s : streams) cudaStreamDestroy(s);
}

TEST(StagedCopy, OverwritingTheBufferRightAfterTheCallChangesNothingOnTheDevice) {
  Stager st(config());
  cudaStream_t s;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  DeviceBuffer busy(4096), dev(2 * kMiB);
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s, busy.p, 4096, 30000, 7, nullptr));  // the DMA waits behind it
  std::vector<char> host = random_bytes(2 * kMiB, 5), original = host;
  ASSERT_EQ(cudaSuccess, st.copy(call(dev.p, host.data(), host.size(), cudaMemcpyHostToDevice, s), &native, nullptr));
  std::memset(host.data(), 0x5a, host.size());
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  EXPECT_EQ(0, std::memcmp(dev.p, original.data(), original.size()));
  cudaStreamDestroy(s);
}

TEST(StagedCopy, BehindABusyKernelAloneItReturnsAtOnce) {
  Stager st(config());
  cudaStream_t s;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  DeviceBuffer busy(4096), dev(kMiB);
  std::vector<char> host = random_bytes(kMiB, 3);
  // Warm the pool: its first slab is pinned here, not below.
  ASSERT_EQ(cudaSuccess, st.copy(call(dev.p, host.data(), kMiB, cudaMemcpyHostToDevice, s), &native, nullptr));
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s, busy.p, 4096, 100000, 7, nullptr));
  auto t = Clock::now();
  ASSERT_EQ(cudaSuccess, st.copy(call(dev.p, host.data(), kMiB, cudaMemcpyHostToDevice, s), &native, nullptr));
  EXPECT_LT(ms_since(t), 50.0);  // the driver would have drained: 100 ms
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  EXPECT_EQ(0, std::memcmp(dev.p, host.data(), kMiB));
  StagingStats stats = st.stats();
  EXPECT_EQ(0u, stats.host_work_waits);
  cudaStreamDestroy(s);
}

TEST(StagedCopy, BehindAnUnfinishedDeviceToHostCopyItWaitsForThatCopy) {
  reset_host_work();
  Stager st(config());
  cudaStream_t s;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  DeviceBuffer busy(4096), dev(kMiB), dev2(kMiB);
  std::vector<char> host = random_bytes(kMiB, 4), next = random_bytes(kMiB, 8);
  ASSERT_EQ(cudaSuccess, cudaMemcpy(dev.p, host.data(), kMiB, cudaMemcpyHostToDevice));
  // A pageable cudaMemcpy returns once its source is staged, before its DMA
  // lands (CUDA's documented behaviour); non-blocking streams do not order
  // after it.
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  void* pinned = nullptr;
  ASSERT_EQ(cudaSuccess, cudaMallocHost(&pinned, kMiB));
  std::memset(pinned, 0, kMiB);
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s, busy.p, 4096, 60000, 7, nullptr));
  // The application's D2H copy into pinned memory: asynchronous, pending
  // behind the kernel.
  ASSERT_EQ(cudaSuccess, st.copy(call(pinned, dev.p, kMiB, cudaMemcpyDeviceToHost, s), &native, nullptr));
  EXPECT_TRUE(host_work_pending());
  auto t = Clock::now();
  ASSERT_EQ(cudaSuccess, st.copy(call(dev2.p, next.data(), kMiB, cudaMemcpyHostToDevice, s), &native, nullptr));
  // The driver's drain would have landed the D2H copy before returning: so does the staged copy.
  EXPECT_GE(ms_since(t), 40.0);
  EXPECT_EQ(0, std::memcmp(pinned, host.data(), kMiB));
  StagingStats stats = st.stats();
  EXPECT_EQ(1u, stats.host_work_waits);
  EXPECT_GE(stats.host_work_wait_ns, 40u * 1000 * 1000);
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  EXPECT_EQ(0, std::memcmp(dev2.p, next.data(), kMiB));
  free_host(pinned);
  cudaStreamDestroy(s);
}

TEST(StagedCopy, OnTheLegacyStreamItWaitsForBlockingStreamsNotNonBlockingOnes) {
  reset_host_work();
  Stager st(config());
  cudaStream_t blocking, nonblocking;
  ASSERT_EQ(cudaSuccess, cudaStreamCreate(&blocking));
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking));
  DeviceBuffer busy(4096), busy2(4096), dev(kMiB), dev2(kMiB);
  void* pinned = nullptr;
  ASSERT_EQ(cudaSuccess, cudaMallocHost(&pinned, 2 * kMiB));
  std::vector<char> host = random_bytes(kMiB, 6);
  // A D2H copy pending on a non-blocking stream: an H2D on another
  // non-blocking-unrelated stream (the legacy one) need not wait for it.
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(nonblocking, busy2.p, 4096, 60000, 7, nullptr));
  ASSERT_EQ(cudaSuccess, st.copy(call(pinned, dev.p, kMiB, cudaMemcpyDeviceToHost, nonblocking), &native, nullptr));
  // And one on a blocking stream: the legacy stream's drain covers it.
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(blocking, busy.p, 4096, 60000, 7, nullptr));
  ASSERT_EQ(cudaSuccess,
            st.copy(call(static_cast<char*>(pinned) + kMiB, dev.p, kMiB, cudaMemcpyDeviceToHost, blocking), &native,
                    nullptr));
  auto t = Clock::now();
  ASSERT_EQ(cudaSuccess, st.copy(call(dev2.p, host.data(), kMiB, cudaMemcpyHostToDevice, nullptr), &native, nullptr));
  EXPECT_GE(ms_since(t), 40.0);
  StagingStats stats = st.stats();
  EXPECT_EQ(1u, stats.legacy_h2d);
  EXPECT_EQ(1u, stats.legacy_other_streams);  // the blocking stream, not the non-blocking one
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  free_host(pinned);
  cudaStreamDestroy(blocking);
  cudaStreamDestroy(nonblocking);
}

TEST(StagedCopy, HostFunctionsAreWaitedForLikeCopies) {
  reset_host_work();
  Stager st(config());
  cudaStream_t s;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  DeviceBuffer busy(4096), dev(kMiB);
  static std::atomic<int> ran{0};
  ran = 0;
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s, busy.p, 4096, 50000, 7, nullptr));
  ASSERT_EQ(cudaSuccess, cudaLaunchHostFunc(s, [](void*) { ran = 1; }, nullptr));
  note_host_work(s, false);  // what the hook of cudaLaunchHostFunc does
  std::vector<char> host = random_bytes(kMiB, 2);
  ASSERT_EQ(cudaSuccess, st.copy(call(dev.p, host.data(), kMiB, cudaMemcpyHostToDevice, s), &native, nullptr));
  EXPECT_EQ(1, ran.load());
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  cudaStreamDestroy(s);
}

TEST(StagedCopy, DeviceToHostDataIsThereWhenTheCallReturns) {
  Stager st(config());
  cudaStream_t s;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  DeviceBuffer busy(4096), dev(2 * kMiB);
  std::vector<char> host = random_bytes(2 * kMiB, 11);
  ASSERT_EQ(cudaSuccess, cudaMemcpy(dev.p, host.data(), host.size(), cudaMemcpyHostToDevice));
  // A pageable cudaMemcpy returns once its source is staged, before its DMA
  // lands (CUDA's documented behaviour); non-blocking streams do not order
  // after it.
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  for (int i = 0; i < 6; ++i) {  // the chooser tries both ways: each must hold
    std::vector<char> back(host.size(), 0);
    ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s, busy.p, 4096, 20000, 7, nullptr));
    ASSERT_EQ(cudaSuccess, st.copy(call(back.data(), dev.p, back.size(), cudaMemcpyDeviceToHost, s), &native, nullptr));
    ASSERT_EQ(0, std::memcmp(back.data(), host.data(), host.size())) << i;
  }
  StagingStats stats = st.stats();
  EXPECT_GE(stats.d2h.staged, 2u);
  EXPECT_GE(stats.passed_measured, 2u);
  cudaStreamDestroy(s);
}

TEST(StagedCopy, AsyncDeviceToHostLandsAtTheStreamSynchronization) {
  reset_host_work();
  StagerConfig cfg = config();
  cfg.async_d2h = true;
  Stager st(cfg);
  cudaStream_t s;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  DeviceBuffer busy(4096), dev(3 * kMiB);
  std::vector<char> host = random_bytes(3 * kMiB, 12), back(3 * kMiB, 0);
  ASSERT_EQ(cudaSuccess, cudaMemcpy(dev.p, host.data(), host.size(), cudaMemcpyHostToDevice));
  // A pageable cudaMemcpy returns once its source is staged, before its DMA
  // lands (CUDA's documented behaviour); non-blocking streams do not order
  // after it.
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s, busy.p, 4096, 100000, 7, nullptr));
  auto t = Clock::now();
  ASSERT_EQ(cudaSuccess, st.copy(call(back.data(), dev.p, back.size(), cudaMemcpyDeviceToHost, s), &native, nullptr));
  EXPECT_LT(ms_since(t), 50.0);  // returned before the kernel ended, hence before the copy
  EXPECT_NE(0, std::memcmp(back.data(), host.data(), host.size()));  // not there yet
  EXPECT_TRUE(host_work_pending());  // a later pageable H2D on s would wait for it
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  EXPECT_EQ(0, std::memcmp(back.data(), host.data(), host.size()));
  EXPECT_EQ(1u, st.stats().async_d2h_copies);
  // cudaMemcpy (synchronous) stays synchronous in this mode.
  std::vector<char> sync_back(host.size(), 0);
  ASSERT_EQ(cudaSuccess, st.copy(call(sync_back.data(), dev.p, host.size(), cudaMemcpyDeviceToHost, nullptr, true),
                                 &native, nullptr));
  EXPECT_EQ(0, std::memcmp(sync_back.data(), host.data(), host.size()));
  cudaStreamDestroy(s);
}

TEST(StagedCopy, AnExhaustedBudgetBlocksThenRecovers) {
  // One slab of 128 KiB: two 64 KiB blocks.
  Stager st(config(64 * kKiB, 128 * kKiB));
  cudaStream_t s;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  DeviceBuffer busy(4096), dev(kMiB);
  std::vector<char> host = random_bytes(kMiB, 13);
  ASSERT_EQ(cudaSuccess, st.copy(call(dev.p, host.data(), 64 * kKiB, cudaMemcpyHostToDevice, s), &native, nullptr));
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s, busy.p, 4096, 40000, 7, nullptr));
  // 256 KiB = 4 blocks behind the kernel: the third waits for it.
  auto t = Clock::now();
  ASSERT_EQ(cudaSuccess, st.copy(call(dev.p, host.data(), 256 * kKiB, cudaMemcpyHostToDevice, s), &native, nullptr));
  EXPECT_GE(ms_since(t), 30.0);
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  EXPECT_EQ(0, std::memcmp(dev.p, host.data(), 256 * kKiB));
  StagingStats stats = st.stats();
  EXPECT_GE(stats.budget_waits, 1u);
  EXPECT_EQ(0u, stats.partial);
  EXPECT_EQ(128 * kKiB, stats.pinned_bytes);
  // Behind a kernel longer than the pool waits, it gives up and lets the
  // runtime copy the rest: slower, never wrong.
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s, busy.p, 4096, 300000, 7, nullptr));
  std::vector<char> more = random_bytes(kMiB, 14);
  ASSERT_EQ(cudaSuccess, st.copy(call(dev.p, more.data(), kMiB, cudaMemcpyHostToDevice, s), &native, nullptr));
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  EXPECT_EQ(0, std::memcmp(dev.p, more.data(), kMiB));
  EXPECT_EQ(1u, st.stats().partial);
  // And recovers once the stream has moved on.
  ASSERT_EQ(cudaSuccess, st.copy(call(dev.p, host.data(), kMiB, cudaMemcpyHostToDevice, s), &native, nullptr));
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  EXPECT_EQ(0, std::memcmp(dev.p, host.data(), kMiB));
  EXPECT_EQ(1u, st.stats().partial);
  cudaStreamDestroy(s);
}

// A copy whose stream's capture status cannot be read passes through under
// its own reason, not as a graph capture (issue 17): on the legacy stream
// while a blocking stream captures, cudaStreamIsCapturing itself fails
// (cudaErrorStreamCaptureImplicit).
TEST(StagedCopy, AFailedCaptureQueryIsNotCountedAsACapture) {
  Stager st(config());
  DeviceBuffer dev(kMiB);
  std::vector<char> host = random_bytes(kMiB, 16);
  cudaStream_t blocking;
  ASSERT_EQ(cudaSuccess, cudaStreamCreate(&blocking));
  ASSERT_EQ(cudaSuccess, cudaStreamBeginCapture(blocking, cudaStreamCaptureModeRelaxed));
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  ASSERT_NE(cudaSuccess, cudaStreamIsCapturing(nullptr, &status));  // the premise
  cudaGetLastError();
  st.copy(call(dev.p, host.data(), kMiB, cudaMemcpyHostToDevice, nullptr), &native, nullptr);
  cudaGraph_t g = nullptr;
  cudaStreamEndCapture(blocking, &g);
  if (g != nullptr) cudaGraphDestroy(g);
  cudaGetLastError();
  StagingStats stats = st.stats();
  EXPECT_EQ(0u, stats.h2d.staged);
  EXPECT_EQ(1u, stats.passed_capture_unknown);
  EXPECT_EQ(0u, stats.passed_capture);
  cudaStreamDestroy(blocking);
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
}

TEST(StagedCopy, WhatItLeavesToTheRuntime) {
  StagerConfig cfg = config();
  cfg.threshold_bytes = 4 * kKiB;
  Stager st(cfg);
  DeviceBuffer dev(kMiB);
  std::vector<char> host = random_bytes(kMiB, 15);
  // Below the threshold.
  ASSERT_EQ(cudaSuccess, st.copy(call(dev.p, host.data(), 100, cudaMemcpyHostToDevice, nullptr), &native, nullptr));
  // Pinned memory: not a pageable copy at all.
  void* pinned = nullptr;
  ASSERT_EQ(cudaSuccess, cudaMallocHost(&pinned, kMiB));
  ASSERT_EQ(cudaSuccess, st.copy(call(dev.p, pinned, kMiB, cudaMemcpyHostToDevice, nullptr), &native, nullptr));
  // Device to device.
  ASSERT_EQ(cudaSuccess, st.copy(call(dev.p, dev.at(4096), 4096, cudaMemcpyDeviceToDevice, nullptr), &native, nullptr));
  // A capturing stream: the runtime answers (the simulated one, like the
  // real one, refuses a pageable copy into a capture).
  cudaStream_t s;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ASSERT_EQ(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  cudaError_t captured = st.copy(call(dev.p, host.data(), kMiB, cudaMemcpyHostToDevice, s), &native, nullptr);
  cudaGraph_t g = nullptr;
  cudaStreamEndCapture(s, &g);
  EXPECT_EQ(cudaErrorStreamCaptureUnsupported, captured);
  cudaGetLastError();
  // A runtime error pending on the thread: left untouched, and still pending.
  void* huge = nullptr;
  ASSERT_NE(cudaSuccess, cudaMalloc(&huge, 1ull << 50));
  ASSERT_EQ(cudaSuccess, st.copy(call(dev.p, host.data(), kMiB, cudaMemcpyHostToDevice, nullptr), &native, nullptr));
  EXPECT_EQ(cudaErrorMemoryAllocation, cudaGetLastError());
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  EXPECT_EQ(0, std::memcmp(dev.p, host.data(), kMiB));
  StagingStats stats = st.stats();
  EXPECT_EQ(0u, stats.h2d.staged);
  EXPECT_EQ(1u, stats.passed_small);
  EXPECT_EQ(1u, stats.passed_capture);
  EXPECT_EQ(0u, stats.passed_capture_unknown);
  // With the error pending the pointers' kinds are known only if cached
  // (a lookup then answers "unknown"): seen and passed, or not seen at all.
  EXPECT_EQ(2u + stats.passed_error_pending, stats.h2d.seen);
  // Exact semantics: host-to-device copies are the runtime's.
  StagerConfig exact = config();
  exact.exact = true;
  Stager ex(exact);
  ASSERT_EQ(cudaSuccess, ex.copy(call(dev.p, host.data(), kMiB, cudaMemcpyHostToDevice, nullptr), &native, nullptr));
  EXPECT_EQ(1u, ex.stats().passed_exact);
  free_host(pinned);
  cudaStreamDestroy(s);
}

TEST(StagedCopy, ARefusedCopyIsRefusedTheSameWay) {
  Stager st(config());
  DeviceBuffer dev(4096);
  std::vector<char> host(64 * kKiB, 1);
  // Past the end of the device allocation: the runtime's answer, as its last error too.
  cudaError_t r = st.copy(call(dev.p, host.data(), host.size(), cudaMemcpyHostToDevice, nullptr), &native, nullptr);
  cudaError_t n = cudaMemcpyAsync(dev.p, host.data(), host.size(), cudaMemcpyHostToDevice, nullptr);
  cudaGetLastError();
  EXPECT_EQ(n, r);
  EXPECT_NE(cudaSuccess, r);
  r = st.copy(call(dev.p, host.data(), host.size(), cudaMemcpyHostToDevice, nullptr), &native, nullptr);
  EXPECT_EQ(r, cudaGetLastError());
}

// See Note [The whole range first]: a copy of many chunks that runs past the
// end of its allocation is refused as a whole, with nothing written: not
// the allocation, not its neighbour (allocated first, so that on the
// simulated device it lies just past the end), not the host buffer; in
// every direction and way, 1D and 2D, from the start or from inside. It
// is not counted as a pageable copy.
TEST(StagedCopy, ACopyPastTheEndIsRefusedWholeWithNothingWritten) {
  StagerConfig staged = config(), async_d2h = config();
  staged.d2h_way = StagerConfig::D2hWay::kStaged;
  async_d2h.async_d2h = true;
  cudaStream_t s;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (const StagerConfig& cfg : {staged, async_d2h}) {
    Stager st(cfg);
    DeviceBuffer neighbour(kMiB), dev(kMiB);
    ASSERT_EQ(cudaSuccess, cudaMemset(neighbour.p, 0x11, kMiB));
    ASSERT_EQ(cudaSuccess, cudaMemset(dev.p, 0x22, kMiB));
    ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
    const std::vector<char> host = random_bytes(3 * kMiB, 16);
    std::vector<char> back(3 * kMiB, 0);
    // Whether every one of `n` bytes at `p` is `v`.
    auto all = [](const char* p, size_t n, char v) { return std::all_of(p, p + n, [v](char c) { return c == v; }); };
    auto refused = [&](CopyCall c, const char* what) {
      SCOPED_TRACE(what);
      cudaGetLastError();
      EXPECT_EQ(cudaErrorInvalidValue, st.copy(c, &native, nullptr));
      EXPECT_EQ(cudaErrorInvalidValue, cudaGetLastError());
      ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
      EXPECT_TRUE(all(neighbour.at(0), kMiB, 0x11)) << "the neighbour was written";
      EXPECT_TRUE(all(dev.at(0), kMiB, 0x22)) << "the allocation was written";
      EXPECT_TRUE(all(back.data(), back.size(), 0)) << "the host buffer was written";
    };
    auto rows = [](CopyCall c, size_t width, size_t height, size_t dpitch, size_t spitch) {
      c.width = width;
      c.height = height;
      c.dpitch = dpitch;
      c.spitch = spitch;
      c.pitched = true;
      return c;
    };
    refused(call(dev.p, host.data(), 2 * kMiB, cudaMemcpyHostToDevice, s), "H2D async");
    refused(call(dev.at(512), host.data(), kMiB, cudaMemcpyHostToDevice, nullptr, true), "H2D sync, from inside");
    refused(call(back.data(), dev.p, 2 * kMiB, cudaMemcpyDeviceToHost, s), "D2H async");
    refused(call(back.data(), dev.at(4096), kMiB, cudaMemcpyDefault, nullptr, true), "D2H sync, from inside");
    refused(rows(call(dev.p, host.data(), 0, cudaMemcpyHostToDevice, s), 4096, kMiB / 8192 + 1, 8192, 4096),
            "H2D 2D: the last row starts past the end");
    refused(rows(call(back.data(), dev.p, 0, cudaMemcpyDeviceToHost, s), 1024, kMiB / 1024 + 1, 1024, 1024),
            "D2H 2D: one row too many");
    EXPECT_EQ(0u, st.stats().h2d.seen + st.stats().d2h.seen);
    // To the last byte: staged, every byte.
    ASSERT_EQ(cudaSuccess, st.copy(call(dev.at(512), host.data(), kMiB - 512, cudaMemcpyHostToDevice, s), &native,
                                   nullptr));
    ASSERT_EQ(cudaSuccess, st.copy(call(back.data(), dev.at(512), kMiB - 512, cudaMemcpyDeviceToHost, s), &native,
                                   nullptr));
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
    EXPECT_EQ(0, std::memcmp(back.data(), host.data(), kMiB - 512));
    EXPECT_TRUE(all(neighbour.at(0), kMiB, 0x11));
    EXPECT_EQ(1u, st.stats().h2d.staged);
    EXPECT_EQ(1u, st.stats().d2h.staged);
  }
  cudaStreamDestroy(s);
}

// See Note [The whole range first]: the range is checked once. A span the
// route found inside a block of gpuslack's allocator (dst_in_block,
// src_in_block) is not asked of anyone again; any other span is asked of
// the driver. Shown with a span the driver would refuse: a 1.5 MiB copy
// into 1 MiB. Unvouched, it is refused whole with nothing written (the
// driver's check); vouched for (which the route never does for such a
// span), the stager takes the route's word and stages it, chunk by chunk,
// until the runtime refuses the chunk that runs past the end: the chunks
// before it are written.
TEST(StagedCopy, ASpanTheRouteVouchedForIsNotCheckedAgain) {
  Stager st(config(384 * kKiB));
  DeviceBuffer dev(kMiB);
  ASSERT_EQ(cudaSuccess, cudaMemset(dev.p, 0x22, kMiB));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  const std::vector<char> host = random_bytes(kMiB + kMiB / 2, 17);
  CopyCall c = call(dev.p, host.data(), host.size(), cudaMemcpyHostToDevice, nullptr, true);
  cudaGetLastError();
  EXPECT_NE(cudaSuccess, st.copy(c, &native, nullptr));
  cudaGetLastError();
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  EXPECT_TRUE(std::all_of(dev.at(0), dev.at(kMiB), [](char b) { return b == 0x22; })) << "written";
  EXPECT_EQ(0u, st.stats().h2d.seen);

  c.dst_in_block = true;
  EXPECT_NE(cudaSuccess, st.copy(c, &native, nullptr));
  cudaGetLastError();
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  EXPECT_EQ(0, std::memcmp(dev.p, host.data(), 2 * 384 * kKiB)) << "the chunks before the refused one";
  EXPECT_TRUE(std::all_of(dev.at(2 * 384 * kKiB), dev.at(kMiB), [](char b) { return b == 0x22; }));
  EXPECT_EQ(1u, st.stats().h2d.seen);
  // The source side's flag says nothing about the device side.
  c.dst_in_block = false;
  c.src_in_block = true;
  ASSERT_EQ(cudaSuccess, cudaMemset(dev.p, 0x22, kMiB));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  EXPECT_NE(cudaSuccess, st.copy(c, &native, nullptr));
  cudaGetLastError();
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  EXPECT_TRUE(std::all_of(dev.at(0), dev.at(kMiB), [](char b) { return b == 0x22; })) << "written";
}

}  // namespace
}  // namespace stage
}  // namespace gpuslack
