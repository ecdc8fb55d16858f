// Allocation and pinned memory: the CUDA Runtime API's "Memory Management"
// and "Unified Addressing" references, and the Programming Guide's
// "Asynchronous Concurrent Execution" > "Implicit Synchronization" and
// "Stream-Ordered Memory Allocator" > "Introduction"; what gpuslack's
// allocator and pinned heap assume (cudaFree's device-wide wait).
#include <cstdlib>
#include <vector>

#include "conformance.h"

using namespace conformance;

namespace {

// "Stream-Ordered Memory Allocator" > "Introduction": "Managing memory
// allocations using cudaMalloc and cudaFree causes the GPU to synchronize
// across all executing CUDA streams": cudaFree waits for work on any
// stream, even one that never touched the memory.
TEST(Allocation, FreeWaitsForTheWholeDevice) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* p = nullptr;
  CUDA_OK(cudaMalloc(&p, 1 << 20));
  CUDA_OK(cudaDeviceSynchronize());
  auto t = Clock::now();
  CUDA_OK(busy(s, kBusyMs));
  CUDA_OK(cudaFree(p));
  EXPECT_GE(ms_since(t), kWaitedMs);
  CUDA_OK(cudaStreamDestroy(s));
}

// "Implicit Synchronization": "a device memory allocation" issued between
// two commands of different streams keeps them from running concurrently:
// an ordering point on the device, not a host wait (the simulated device's
// default; GPUSIM_MALLOC_SYNC=1 makes it a host wait). Where a real GPU
// fails the first half, cudaMalloc waits on the host.
TEST(Allocation, MallocDoesNotWaitForTheDeviceOnTheHost) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto t = Clock::now();
  CUDA_OK(busy(s, kBusyMs));
  void* p = nullptr;
  CUDA_OK(cudaMalloc(&p, 1 << 20));
  EXPECT_LT(ms_since(t), kAtOnceMs);
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaFree(p));
  CUDA_OK(cudaStreamDestroy(s));
}

// Runtime API, "Stream Ordered Memory Allocator": cudaMallocAsync and
// cudaFreeAsync are ordered in the stream; neither waits for the work
// ahead of it on the host.
TEST(Allocation, MallocAsyncAndFreeAsyncAreStreamOrderedNotHostWaits) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto t = Clock::now();
  CUDA_OK(busy(s, kBusyMs));
  void* p = nullptr;
  CUDA_OK(cudaMallocAsync(&p, 1 << 20, s));
  CUDA_OK(cudaMemsetAsync(p, 0, 1 << 20, s));
  CUDA_OK(cudaFreeAsync(p, s));
  EXPECT_LT(ms_since(t), kAtOnceMs);
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_GE(ms_since(t), kWaitedMs);
  CUDA_OK(cudaStreamDestroy(s));
}

// cudaFreeHost waits for the device: what gpuslack's pinned heap exists to
// avoid (docs/pinned-and-staged.md). No reference section states it in so
// many words (the Programming Guide's "Implicit Synchronization" names the
// page-locked allocation, not its free): a real GPU decides.
TEST(PinnedMemory, FreeHostWaitsForTheDevice) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* h = nullptr;
  CUDA_OK(cudaMallocHost(&h, 1 << 20));
  CUDA_OK(cudaDeviceSynchronize());
  auto t = Clock::now();
  CUDA_OK(busy(s, kBusyMs));
  CUDA_OK(cudaFreeHost(h));
  EXPECT_GE(ms_since(t), kWaitedMs);
  CUDA_OK(cudaStreamDestroy(s));
}

// cudaMallocHost: "Since the memory can be accessed directly by the device,
// it can be read or written with much higher bandwidth than pageable
// memory"; cudaPointerGetAttributes ("Unified Addressing") tells device,
// pinned (allocated or registered, anywhere inside the range) and pageable
// memory (cudaMemoryTypeUnregistered); cudaHostGetFlags the flags.
TEST(PinnedMemory, PointerAttributesTellDevicePinnedRegisteredAndPageable) {
  void* d = nullptr;
  void* h = nullptr;
  CUDA_OK(cudaMalloc(&d, 4096));
  CUDA_OK(cudaHostAlloc(&h, 8192, cudaHostAllocMapped));
  std::vector<char> pageable(1 << 16);
  cudaPointerAttributes a{};
  CUDA_OK(cudaPointerGetAttributes(&a, d));
  EXPECT_EQ(cudaMemoryTypeDevice, a.type);
  CUDA_OK(cudaPointerGetAttributes(&a, static_cast<char*>(h) + 100));
  EXPECT_EQ(cudaMemoryTypeHost, a.type);
  unsigned flags = 0;
  CUDA_OK(cudaHostGetFlags(&flags, h));
  EXPECT_TRUE(flags & cudaHostAllocMapped);
  CUDA_OK(cudaPointerGetAttributes(&a, pageable.data()));
  EXPECT_EQ(cudaMemoryTypeUnregistered, a.type);
  CUDA_OK(cudaHostRegister(pageable.data(), pageable.size(), cudaHostRegisterDefault));
  CUDA_OK(cudaPointerGetAttributes(&a, pageable.data() + 10));
  EXPECT_EQ(cudaMemoryTypeHost, a.type);
  CUDA_OK(cudaHostUnregister(pageable.data()));
  CUDA_OK(cudaFreeHost(h));
  CUDA_OK(cudaFree(d));
}

// cudaMemGetInfo: free and total memory of the current device; an
// allocation takes from the free memory.
TEST(Allocation, MemGetInfoSeesAnAllocation) {
  size_t free0 = 0, total = 0, free1 = 0;
  CUDA_OK(cudaMemGetInfo(&free0, &total));
  EXPECT_GT(total, 0u);
  EXPECT_LE(free0, total);
  void* p = nullptr;
  CUDA_OK(cudaMalloc(&p, 256 << 20));
  CUDA_OK(cudaMemGetInfo(&free1, &total));
  EXPECT_LE(free1 + (200 << 20), free0);
  CUDA_OK(cudaFree(p));
}

// cudaMalloc: "If the allocation fails, cudaErrorMemoryAllocation"; the
// runtime's error, not a crash, for a size no device has.
TEST(Allocation, AnImpossibleAllocationFailsCleanly) {
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(cudaErrorMemoryAllocation, cudaMalloc(&p, size_t{1} << 50));
  EXPECT_EQ(cudaErrorMemoryAllocation, cudaGetLastError());
  void* q = nullptr;
  CUDA_OK(cudaMalloc(&q, 4096));  // not sticky
  CUDA_OK(cudaFree(q));
}

}  // namespace
