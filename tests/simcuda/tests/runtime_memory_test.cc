// The simulated runtime's copies and allocation against the CUDA Runtime
// API's "API synchronization behavior": which copies block the host and
// when, allocation costs, capacity and pointer attributes.
#include <cstring>
#include <thread>

#include "runtime_test_util.h"

using namespace runtimetest;

namespace {

// ---- copies ----

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

// README.md, "Where the documentation is not clear": by default a pageable
// host-to-device copy of at most 64 KB is asynchronous to the host
// (Programming Guide, "Concurrent Execution between Host and Device").
TEST(Copies, SmallPageableHostToDeviceCopyDoesNotDrainTheStream) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  DevBuf d(64 << 10), busy(4096);
  auto data = random_bytes(64 << 10, 6);
  std::vector<unsigned char> src = data;
  CUDA_OK(gpusim_busy_kernel(s, busy.p, 4096, kBusyUs, 1, nullptr));
  auto t = Clock::now();
  CUDA_OK(cudaMemcpy(d.p, src.data(), src.size(), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpyAsync(d.p, src.data(), src.size(), cudaMemcpyHostToDevice, s));
  EXPECT_LT(ms_since(t), kFreeMs);
  std::fill(src.begin(), src.end(), 0);  // staged: the buffer may be reused
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

// By default cudaMalloc is an implicit ordering point between streams
// (Programming Guide, "Implicit Synchronization"), not a host wait.
TEST(Allocation, MallocOrdersStreamsWithoutWaitingForTheDevice) {
  cudaStream_t a, b;
  CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  DevBuf busy(4096);
  auto t0 = Clock::now();
  CUDA_OK(gpusim_busy_kernel(a, busy.p, 4096, kBusyUs, 1, nullptr));
  void* p = nullptr;
  CUDA_OK(cudaMalloc(&p, 1 << 20));
  EXPECT_LT(ms_since(t0), kFreeMs);  // the host did not wait
  cudaEvent_t e;
  CUDA_OK(cudaEventCreate(&e));
  CUDA_OK(cudaEventRecord(e, b));
  CUDA_OK(cudaEventSynchronize(e));  // b's work waited for a's kernel
  EXPECT_GE(ms_since(t0), kBlockedMs);
  CUDA_OK(cudaEventDestroy(e));
  CUDA_OK(cudaFree(p));
  CUDA_OK(cudaStreamDestroy(a));
  CUDA_OK(cudaStreamDestroy(b));
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
  unsigned flags = 0;
  CUDA_OK(cudaHostGetFlags(&flags, static_cast<char*>(pinned) + 10));
  EXPECT_EQ(unsigned(cudaHostAllocMapped), flags);
  EXPECT_EQ(cudaErrorInvalidValue, cudaHostGetFlags(&flags, dev));
  cudaGetLastError();
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

}  // namespace
