// The simulated runtime (libcudart.so.13) against the CUDA Runtime API's
// documented behaviour: stream ordering, implicit synchronization, copy
// blocking rules, events, capture, allocation costs and capacity.
//
// Timing assertions use wide margins. A call that must wait for a 50 ms busy
// kernel must return >= 40 ms after the kernel was launched (the clock starts
// before the launch, so a slow machine can only lengthen it); a call that
// must not wait must return in < 25 ms. Both hold on a loaded 2-core machine
// and under the sanitizers.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "gpusim.h"

// Declared by the headers only under CUDA_API_PER_THREAD_DEFAULT_STREAM.
extern "C" cudaError_t cudaStreamQuery_ptsz(cudaStream_t);

namespace {

using Clock = std::chrono::steady_clock;
constexpr unsigned kBusyUs = 50000;
constexpr double kBlockedMs = 40;
constexpr double kFreeMs = 25;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

#define CUDA_OK(x) ASSERT_EQ(cudaSuccess, (x))

struct DevBuf {
  void* p = nullptr;
  explicit DevBuf(size_t n) { EXPECT_EQ(cudaSuccess, cudaMalloc(&p, n)); }
  ~DevBuf() { cudaFree(p); }
};

std::vector<unsigned char> random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

// ---- streams ----

TEST(Streams, OpsOnOneStreamRunInOrder) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  DevBuf d(1 << 20);
  auto a = random_bytes(1 << 20, 1), b = random_bytes(1 << 20, 2);
  void *pa, *pb;
  CUDA_OK(cudaMallocHost(&pa, a.size()));
  CUDA_OK(cudaMallocHost(&pb, b.size()));
  std::memcpy(pa, a.data(), a.size());
  std::vector<unsigned char> out(a.size());
  void* pout;
  CUDA_OK(cudaMallocHost(&pout, out.size()));
  // Write a, overwrite with b, read back: order decides the result.
  CUDA_OK(cudaMemcpyAsync(d.p, pa, a.size(), cudaMemcpyHostToDevice, s));
  std::memcpy(pb, b.data(), b.size());
  CUDA_OK(cudaMemcpyAsync(d.p, pb, b.size(), cudaMemcpyHostToDevice, s));
  CUDA_OK(cudaMemcpyAsync(pout, d.p, out.size(), cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(0, std::memcmp(pout, b.data(), b.size()));
  cudaFreeHost(pa);
  cudaFreeHost(pb);
  cudaFreeHost(pout);
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Streams, QueryAndSynchronizeReflectQueuedWork) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  DevBuf d(4096);
  auto t0 = Clock::now();  // the kernel cannot end before t0 + kBusyUs
  CUDA_OK(gpusim_busy_kernel(s, d.p, 4096, kBusyUs, 7, nullptr));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_GE(ms_since(t0), kBlockedMs);
  EXPECT_EQ(cudaSuccess, cudaStreamQuery(s));
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Streams, LegacyDefaultStreamWaitsForBlockingStreams) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  DevBuf d(4096);
  auto t0 = Clock::now();  // the kernel cannot end before t0 + kBusyUs
  CUDA_OK(gpusim_busy_kernel(s, d.p, 4096, kBusyUs, 7, nullptr));
  // Work on the legacy stream waits for the busy kernel...
  auto t = Clock::now();
  CUDA_OK(cudaMemsetAsync(d.p, 0, 4096, nullptr));
  EXPECT_LT(ms_since(t), kFreeMs);  // ...but the host does not
  CUDA_OK(cudaStreamSynchronize(nullptr));
  EXPECT_GE(ms_since(t0), kBlockedMs);
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Streams, BlockingStreamWaitsForLegacyStream) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  DevBuf d(4096), e(4096);
  auto t0 = Clock::now();  // the kernel cannot end before t0 + kBusyUs
  CUDA_OK(gpusim_busy_kernel(nullptr, d.p, 4096, kBusyUs, 7, nullptr));
  CUDA_OK(cudaMemsetAsync(e.p, 0, 4096, s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_GE(ms_since(t0), kBlockedMs);
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Streams, NonBlockingStreamIgnoresLegacyStream) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  DevBuf d(4096), e(4096);
  CUDA_OK(gpusim_busy_kernel(nullptr, d.p, 4096, kBusyUs, 7, nullptr));
  CUDA_OK(cudaMemsetAsync(e.p, 0, 4096, s));
  auto t = Clock::now();
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_LT(ms_since(t), kFreeMs);
  // And the legacy stream does not wait for it.
  CUDA_OK(cudaStreamSynchronize(nullptr));
  CUDA_OK(gpusim_busy_kernel(s, e.p, 4096, kBusyUs, 7, nullptr));
  t = Clock::now();
  CUDA_OK(cudaMemsetAsync(d.p, 1, 16, nullptr));
  CUDA_OK(cudaStreamSynchronize(nullptr));
  EXPECT_LT(ms_since(t), kBlockedMs);
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Streams, PerThreadDefaultStreamIsPerThreadAndBlocking) {
  DevBuf d(4096);
  // Two threads' per-thread streams do not wait for each other.
  std::thread other([&] {
    EXPECT_EQ(cudaSuccess, gpusim_busy_kernel(cudaStreamPerThread, d.p, 4096, kBusyUs, 1, nullptr));
  });
  other.join();
  DevBuf e(4096);
  auto t = Clock::now();
  CUDA_OK(cudaMemsetAsync(e.p, 0, 4096, cudaStreamPerThread));
  CUDA_OK(cudaStreamSynchronize(cudaStreamPerThread));
  EXPECT_LT(ms_since(t), kFreeMs);
  // The _ptsz entry points read NULL as the per-thread stream.
  auto t0 = Clock::now();
  CUDA_OK(gpusim_busy_kernel(cudaStreamPerThread, e.p, 4096, kBusyUs, 1, nullptr));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery_ptsz(nullptr));
  // The per-thread stream is blocking: legacy work waits for it.
  CUDA_OK(cudaMemsetAsync(e.p, 0, 16, cudaStreamLegacy));
  CUDA_OK(cudaStreamSynchronize(cudaStreamLegacy));
  EXPECT_GE(ms_since(t0), kBlockedMs);
}

TEST(Streams, DeviceSynchronizeWaitsForAllStreams) {
  cudaStream_t a, b;
  CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreate(&b));
  DevBuf d(4096), e(4096);
  auto t0 = Clock::now();  // the kernel cannot end before t0 + kBusyUs
  CUDA_OK(gpusim_busy_kernel(a, d.p, 4096, kBusyUs, 1, nullptr));
  CUDA_OK(gpusim_busy_kernel(b, e.p, 4096, kBusyUs / 2, 1, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_GE(ms_since(t0), kBlockedMs);
  EXPECT_EQ(cudaSuccess, cudaStreamQuery(a));
  EXPECT_EQ(cudaSuccess, cudaStreamQuery(b));
}

void CUDART_CB set_flag(void* p) { static_cast<std::atomic<int>*>(p)->store(1); }

TEST(Streams, HostFunctionRunsInStreamOrder) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  DevBuf d(4096);
  std::atomic<int> flag{0};
  CUDA_OK(gpusim_busy_kernel(s, d.p, 4096, kBusyUs / 2, 1, nullptr));
  CUDA_OK(cudaLaunchHostFunc(s, set_flag, &flag));
  EXPECT_EQ(0, flag.load());
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(1, flag.load());
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Streams, DestroyedStreamStillFinishesItsWork) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  DevBuf d(4096);
  volatile int status = 0;
  CUDA_OK(gpusim_busy_kernel(s, d.p, 4096, 10000, 1, &status));
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(1, status);
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaStreamQuery(s));
}

// ---- events ----

TEST(Events, RecordQuerySynchronizeElapsed) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  cudaEvent_t start, stop;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&stop));
  EXPECT_EQ(cudaSuccess, cudaEventQuery(stop));  // never recorded: complete
  DevBuf d(4096);
  CUDA_OK(cudaEventRecord(start, s));
  CUDA_OK(gpusim_busy_kernel(s, d.p, 4096, kBusyUs, 1, nullptr));
  CUDA_OK(cudaEventRecord(stop, s));
  EXPECT_EQ(cudaErrorNotReady, cudaEventQuery(stop));
  float ms = 0;
  EXPECT_EQ(cudaErrorNotReady, cudaEventElapsedTime(&ms, start, stop));
  CUDA_OK(cudaEventSynchronize(stop));
  EXPECT_EQ(cudaSuccess, cudaEventQuery(stop));
  CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
  EXPECT_GE(ms, kBlockedMs);
  EXPECT_LT(ms, 500.0);
  cudaEvent_t untimed;
  CUDA_OK(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
  CUDA_OK(cudaEventRecord(untimed, s));
  CUDA_OK(cudaEventSynchronize(untimed));
  EXPECT_NE(cudaSuccess, cudaEventElapsedTime(&ms, start, untimed));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaEventDestroy(untimed);
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Events, StreamWaitEventOrdersAcrossStreams) {
  cudaStream_t a, b;
  CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaEvent_t e;
  CUDA_OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  DevBuf d(4096), f(4096);
  auto t0 = Clock::now();  // the kernel cannot end before t0 + kBusyUs
  CUDA_OK(gpusim_busy_kernel(a, d.p, 4096, kBusyUs, 1, nullptr));
  CUDA_OK(cudaEventRecord(e, a));
  CUDA_OK(cudaStreamWaitEvent(b, e, 0));
  CUDA_OK(cudaMemsetAsync(f.p, 0, 4096, b));
  CUDA_OK(cudaStreamSynchronize(b));
  EXPECT_GE(ms_since(t0), kBlockedMs);
  cudaEventDestroy(e);
}

// ---- copies ----

struct Pinned {
  void* p = nullptr;
  size_t n;
  explicit Pinned(size_t n) : n(n) { EXPECT_EQ(cudaSuccess, cudaMallocHost(&p, n)); }
  ~Pinned() { cudaFreeHost(p); }
};

TEST(Copies, PinnedAsyncCopiesDoNotBlockTheHost) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  DevBuf d(1 << 20), busy(4096);
  Pinned h(1 << 20);
  auto data = random_bytes(1 << 20, 3);
  std::memcpy(h.p, data.data(), data.size());
  CUDA_OK(gpusim_busy_kernel(s, busy.p, 4096, kBusyUs, 1, nullptr));
  auto t = Clock::now();
  CUDA_OK(cudaMemcpyAsync(d.p, h.p, h.n, cudaMemcpyHostToDevice, s));
  CUDA_OK(cudaMemcpyAsync(h.p, d.p, h.n, cudaMemcpyDeviceToHost, s));
  EXPECT_LT(ms_since(t), kFreeMs);
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(0, std::memcmp(h.p, data.data(), data.size()));
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Copies, PageableHostToDeviceAsyncDrainsTheStreamThenReturns) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  DevBuf d(1 << 20), busy(4096);
  auto data = random_bytes(1 << 20, 4);
  std::vector<unsigned char> src = data;
  auto t0 = Clock::now();  // the kernel cannot end before t0 + kBusyUs
  CUDA_OK(gpusim_busy_kernel(s, busy.p, 4096, kBusyUs, 1, nullptr));
  CUDA_OK(cudaMemcpyAsync(d.p, src.data(), src.size(), cudaMemcpyHostToDevice, s));
  EXPECT_GE(ms_since(t0), kBlockedMs);  // the driver drained the stream
  // The buffer was staged: the application may reuse it at once.
  std::fill(src.begin(), src.end(), 0);
  std::vector<unsigned char> back(src.size());
  CUDA_OK(cudaMemcpy(back.data(), d.p, back.size(), cudaMemcpyDeviceToHost));
  EXPECT_EQ(data, back);
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Copies, PageableDeviceToHostAsyncReturnsWhenComplete) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  DevBuf d(1 << 20), busy(4096);
  auto data = random_bytes(1 << 20, 5);
  CUDA_OK(cudaMemcpy(d.p, data.data(), data.size(), cudaMemcpyHostToDevice));
  CUDA_OK(cudaDeviceSynchronize());
  auto t0 = Clock::now();  // the kernel cannot end before t0 + kBusyUs
  CUDA_OK(gpusim_busy_kernel(s, busy.p, 4096, kBusyUs, 1, nullptr));
  std::vector<unsigned char> out(data.size());
  CUDA_OK(cudaMemcpyAsync(out.data(), d.p, out.size(), cudaMemcpyDeviceToHost, s));
  EXPECT_GE(ms_since(t0), kBlockedMs);
  EXPECT_EQ(data, out);  // complete on return, without a sync
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Copies, SynchronousMemcpyRules) {
  DevBuf d(1 << 20), e(1 << 20), busy(4096);
  Pinned h(1 << 20);
  // Pinned H2D: synchronous with respect to the host.
  auto t0 = Clock::now();
  CUDA_OK(gpusim_busy_kernel(nullptr, busy.p, 4096, kBusyUs, 1, nullptr));
  CUDA_OK(cudaMemcpy(d.p, h.p, h.n, cudaMemcpyHostToDevice));
  EXPECT_GE(ms_since(t0), kBlockedMs);
  // D2D: no host-side synchronization.
  t0 = Clock::now();
  CUDA_OK(gpusim_busy_kernel(nullptr, busy.p, 4096, kBusyUs, 1, nullptr));
  auto t = Clock::now();
  CUDA_OK(cudaMemcpy(e.p, d.p, h.n, cudaMemcpyDeviceToDevice));
  EXPECT_LT(ms_since(t), kFreeMs);
  // D2H: returns once complete (after the kernel and the D2D copy).
  CUDA_OK(cudaMemcpy(h.p, e.p, h.n, cudaMemcpyDeviceToHost));
  EXPECT_GE(ms_since(t0), kBlockedMs);
}

TEST(Copies, TwoDimensionalCopiesAndMemsets) {
  const size_t w = 100, hgt = 8, pitch = 512;
  void* d;
  size_t dpitch;
  CUDA_OK(cudaMallocPitch(&d, &dpitch, w, hgt));
  EXPECT_GE(dpitch, w);
  auto src = random_bytes(pitch * hgt, 6);
  CUDA_OK(cudaMemcpy2D(d, dpitch, src.data(), pitch, w, hgt, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset2D(static_cast<char*>(d) + 10, dpitch, 0xAB, 5, hgt));
  std::vector<unsigned char> out(w * hgt);
  CUDA_OK(cudaMemcpy2D(out.data(), w, d, dpitch, w, hgt, cudaMemcpyDeviceToHost));
  for (size_t r = 0; r < hgt; ++r)
    for (size_t c = 0; c < w; ++c) {
      unsigned char want = (c >= 10 && c < 15) ? 0xAB : src[r * pitch + c];
      ASSERT_EQ(want, out[r * w + c]) << r << "," << c;
    }
  CUDA_OK(cudaFree(d));
}

TEST(Copies, MemsetToPinnedHostIsSynchronous) {
  Pinned h(1 << 16);
  DevBuf busy(4096);
  auto t0 = Clock::now();  // the kernel cannot end before t0 + kBusyUs
  CUDA_OK(gpusim_busy_kernel(nullptr, busy.p, 4096, kBusyUs, 1, nullptr));
  CUDA_OK(cudaMemsetAsync(h.p, 0x5A, h.n, nullptr));
  EXPECT_GE(ms_since(t0), kBlockedMs);
  EXPECT_EQ(0x5A, static_cast<unsigned char*>(h.p)[h.n - 1]);
  std::vector<char> pageable(64);
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemset(pageable.data(), 0, 64));
}

TEST(Copies, BatchAndPeerCopies) {
  DevBuf a(4096), b(4096);
  auto data = random_bytes(4096, 9);
  Pinned h(4096);
  std::memcpy(h.p, data.data(), 4096);
  void* dsts[] = {a.p};
  const void* srcs[] = {h.p};
  size_t sizes[] = {4096};
  CUDA_OK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, nullptr, nullptr, 0, nullptr));
  CUDA_OK(cudaMemcpyPeer(b.p, 0, a.p, 0, 4096));
  std::vector<unsigned char> out(4096);
  CUDA_OK(cudaMemcpy(out.data(), b.p, 4096, cudaMemcpyDeviceToHost));
  EXPECT_EQ(data, out);
}

TEST(Copies, CopyPastTheEndOfAnAllocationFails) {
  DevBuf d(4096);
  std::vector<char> h(8192);
  EXPECT_EQ(cudaErrorInvalidValue, cudaMemcpy(d.p, h.data(), 8192, cudaMemcpyHostToDevice));
}

// ---- allocation ----

TEST(Allocation, FreeWaitsForTheWholeDevice) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void *busy, *other;
  CUDA_OK(cudaMalloc(&busy, 4096));
  CUDA_OK(cudaMalloc(&other, 4096));
  auto t0 = Clock::now();  // the kernel cannot end before t0 + kBusyUs
  CUDA_OK(gpusim_busy_kernel(s, busy, 4096, kBusyUs, 1, nullptr));
  CUDA_OK(cudaFree(other));  // unrelated memory, still a device-wide wait
  EXPECT_GE(ms_since(t0), kBlockedMs);
  CUDA_OK(cudaFree(busy));
  EXPECT_EQ(cudaErrorInvalidValue, cudaFree(busy));  // double free
}

TEST(Allocation, CostsFollowTheModel) {
  // Defaults: cudaFree ~14 us, cudaMalloc ~10 us; cudaMallocHost of 64 MiB
  // pins at 4 GB/s: >= 16 ms.
  void* p;
  auto t = Clock::now();
  CUDA_OK(cudaMallocHost(&p, 64 << 20));
  EXPECT_GE(ms_since(t), 14.0);
  CUDA_OK(cudaFreeHost(p));
  t = Clock::now();
  for (int i = 0; i < 10; ++i) {
    CUDA_OK(cudaMalloc(&p, 1 << 20));
    CUDA_OK(cudaFree(p));
  }
  EXPECT_GE(ms_since(t), 10 * 0.024);
}

TEST(Allocation, MemGetInfoTracksCapacity) {
  size_t free0, total;
  CUDA_OK(cudaMemGetInfo(&free0, &total));
  EXPECT_EQ(total, size_t{8} << 30);
  void* p;
  CUDA_OK(cudaMalloc(&p, 100 << 20));
  size_t free1;
  CUDA_OK(cudaMemGetInfo(&free1, &total));
  EXPECT_EQ(free0 - free1, size_t{100} << 20);
  EXPECT_EQ(gpusim_device_used(0), total - free1);
  CUDA_OK(cudaFree(p));
  CUDA_OK(cudaMemGetInfo(&free1, &total));
  EXPECT_EQ(free0, free1);
}

TEST(Allocation, OutOfMemoryPastCapacity) {
  void* p = nullptr;
  EXPECT_EQ(cudaErrorMemoryAllocation, cudaMalloc(&p, size_t{9} << 30));
  EXPECT_EQ(cudaErrorMemoryAllocation, cudaGetLastError());
  EXPECT_EQ(cudaSuccess, cudaGetLastError());  // reset by the read
  void* a;
  CUDA_OK(cudaMalloc(&a, size_t{6} << 30));
  EXPECT_EQ(cudaErrorMemoryAllocation, cudaMalloc(&p, size_t{3} << 30));
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaMalloc(&p, size_t{3} << 30));
  CUDA_OK(cudaFree(p));
}

TEST(Allocation, MallocAsyncIsStreamOrdered) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  void* p;
  size_t before = gpusim_device_used(0);
  CUDA_OK(cudaMallocAsync(&p, 1 << 20, s));
  EXPECT_EQ(before + (1 << 20), gpusim_device_used(0));
  volatile int status = 0;
  CUDA_OK(gpusim_busy_kernel(s, p, 1 << 20, kBusyUs, 3, &status));
  auto t = Clock::now();
  CUDA_OK(cudaFreeAsync(p, s));
  EXPECT_LT(ms_since(t), kFreeMs);  // no wait on free
  EXPECT_EQ(before + (1 << 20), gpusim_device_used(0));  // not yet reached
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(before, gpusim_device_used(0));
  EXPECT_EQ(1, status);
  cudaMemPool_t pool;
  CUDA_OK(cudaDeviceGetDefaultMemPool(&pool, 0));
  CUDA_OK(cudaMallocFromPoolAsync(&p, 4096, pool, s));
  CUDA_OK(cudaFreeAsync(p, s));
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Allocation, PointerAttributesTellEveryKind) {
  void *dev, *pinned, *managed;
  CUDA_OK(cudaMalloc(&dev, 4096));
  CUDA_OK(cudaHostAlloc(&pinned, 4096, cudaHostAllocMapped));
  CUDA_OK(cudaMallocManaged(&managed, 4096, cudaMemAttachGlobal));
  std::vector<char> pageable(8192);
  cudaPointerAttributes a;
  CUDA_OK(cudaPointerGetAttributes(&a, static_cast<char*>(dev) + 100));
  EXPECT_EQ(cudaMemoryTypeDevice, a.type);
  EXPECT_EQ(0, a.device);
  CUDA_OK(cudaPointerGetAttributes(&a, pinned));
  EXPECT_EQ(cudaMemoryTypeHost, a.type);
  CUDA_OK(cudaPointerGetAttributes(&a, managed));
  EXPECT_EQ(cudaMemoryTypeManaged, a.type);
  CUDA_OK(cudaPointerGetAttributes(&a, pageable.data()));
  EXPECT_EQ(cudaMemoryTypeUnregistered, a.type);
  CUDA_OK(cudaHostRegister(pageable.data(), pageable.size(), cudaHostRegisterDefault));
  CUDA_OK(cudaPointerGetAttributes(&a, pageable.data() + 10));
  EXPECT_EQ(cudaMemoryTypeHost, a.type);
  EXPECT_EQ(cudaErrorHostMemoryAlreadyRegistered,
            cudaHostRegister(pageable.data(), pageable.size(), cudaHostRegisterDefault));
  CUDA_OK(cudaHostUnregister(pageable.data()));
  EXPECT_EQ(cudaErrorHostMemoryNotRegistered, cudaHostUnregister(pageable.data()));
  CUDA_OK(cudaPointerGetAttributes(&a, pageable.data()));
  EXPECT_EQ(cudaMemoryTypeUnregistered, a.type);
  cudaFree(dev);
  cudaFreeHost(pinned);
  cudaFree(managed);
}

TEST(Allocation, FreeHostWaitsForTheDevice) {
  void* p;
  CUDA_OK(cudaMallocHost(&p, 4096));
  DevBuf busy(4096);
  auto t0 = Clock::now();  // the kernel cannot end before t0 + kBusyUs
  CUDA_OK(gpusim_busy_kernel(nullptr, busy.p, 4096, kBusyUs, 1, nullptr));
  CUDA_OK(cudaFreeHost(p));
  EXPECT_GE(ms_since(t0), kBlockedMs);
}

// ---- the busy kernel ----

TEST(BusyKernel, CatchesAWriteToMemoryItStillUses) {
#ifdef __SANITIZE_THREAD__
  GTEST_SKIP() << "the write under the kernel is a deliberate data race";
#endif
  cudaStream_t a, b;
  CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  DevBuf d(1 << 16);
  volatile int status = 0;
  long before = gpusim_busy_kernel_violations();
  CUDA_OK(gpusim_busy_kernel(a, d.p, 1 << 16, kBusyUs, 0x12345678, &status));
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // Another stream writes the same memory while the kernel runs.
  CUDA_OK(cudaMemsetAsync(d.p, 0, 1 << 16, b));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(-1, status);
  EXPECT_EQ(before + 1, gpusim_busy_kernel_violations());
  // Ordered after it, the same write is fine.
  status = 0;
  CUDA_OK(gpusim_busy_kernel(a, d.p, 1 << 16, 10000, 1, &status));
  CUDA_OK(cudaMemsetAsync(d.p, 0, 1 << 16, a));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(1, status);
}

// ---- capture ----

TEST(Capture, CapturedCopiesAndMemsetsReplayOnLaunch) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  DevBuf a(4096), b(4096);
  Pinned h(4096);
  cudaStreamCaptureStatus st;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaStreamIsCapturing(s, &st));
  EXPECT_EQ(cudaStreamCaptureStatusActive, st);
  CUDA_OK(cudaMemsetAsync(a.p, 0x11, 4096, s));
  CUDA_OK(cudaMemcpyAsync(b.p, a.p, 4096, cudaMemcpyDeviceToDevice, s));
  CUDA_OK(cudaMemcpyAsync(h.p, b.p, 4096, cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported ? cudaSuccess : cudaErrorUnknown);
  cudaGraph_t g;
  // The synchronize above was refused and invalidated the capture.
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));

  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaMemsetAsync(a.p, 0x11, 4096, s));
  CUDA_OK(cudaMemcpyAsync(b.p, a.p, 4096, cudaMemcpyDeviceToDevice, s));
  CUDA_OK(cudaMemcpyAsync(h.p, b.p, 4096, cudaMemcpyDeviceToHost, s));
  EXPECT_EQ(0, static_cast<unsigned char*>(h.p)[0]);  // nothing ran yet
  CUDA_OK(cudaStreamEndCapture(s, &g));
  CUDA_OK(cudaStreamIsCapturing(s, &st));
  EXPECT_EQ(cudaStreamCaptureStatusNone, st);
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(0, static_cast<unsigned char*>(h.p)[0]);
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  CUDA_OK(cudaGraphLaunch(exec, s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(0x11, static_cast<unsigned char*>(h.p)[4095]);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
}

TEST(Capture, UnsafeCallsAreRefusedDuringGlobalCapture) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  void* p = nullptr;
  EXPECT_EQ(cudaErrorStreamCaptureUnsupported, cudaMalloc(&p, 4096));
  cudaGraph_t g;
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
  // Pageable copies cannot be captured; the legacy stream cannot be used
  // while a blocking stream captures.
  std::vector<char> pageable(64);
  DevBuf d(64);
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  EXPECT_EQ(cudaErrorStreamCaptureUnsupported,
            cudaMemcpyAsync(d.p, pageable.data(), 64, cudaMemcpyHostToDevice, s));
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  EXPECT_EQ(cudaErrorStreamCaptureImplicit, cudaMemsetAsync(d.p, 0, 64, nullptr));
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
  // Relaxed mode allows cudaMalloc.
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  CUDA_OK(cudaMalloc(&p, 4096));
  CUDA_OK(cudaStreamEndCapture(s, &g));
  cudaGraphDestroy(g);
  cudaFree(p);
}

// ---- devices ----

TEST(Devices, ShapeAndErrors) {
  int n = -1;
  CUDA_OK(cudaGetDeviceCount(&n));
  EXPECT_EQ(1, n);
  EXPECT_EQ(cudaErrorInvalidDevice, cudaSetDevice(1));
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  EXPECT_EQ(size_t{8} << 30, prop.totalGlobalMem);
  int v = 0;
  CUDA_OK(cudaRuntimeGetVersion(&v));
  EXPECT_EQ(CUDART_VERSION, v);
  EXPECT_EQ(cudaErrorInvalidResourceHandle,
            cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(0x1234)));
}

}  // namespace
