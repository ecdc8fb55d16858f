// What the device has free under allocator:vmm, in process, on an 8 GiB
// simulated device (CMake): cudaMemGetInfo counts every byte the VMM
// allocator holds mapped with no live block in it (docs/allocator.md,
// "cudaMemGetInfo"), an allocation after cudaDeviceSynchronize reuses what
// was freed before it, and an allocation gpuslack passes to the runtime
// gets back the memory gpuslack holds (Note [Retrying a pass-through
// allocation] in interpose/routes_passthrough.inc), with the result and the
// last error the runtime alone would give.
//
// The test links the simulated runtime and dlopen()s libgpuslack.so: the
// hooks are the library's symbols, the runtime's own functions (the error
// state, the busy kernel) are called directly.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <vector>

#include "gpuslack/gpuslack.h"
#include "gpusim.h"
#include "in_process.h"

namespace {

constexpr size_t kMiB = 1ull << 20, kGiB = 1ull << 30;

struct Hooks {
  cudaError_t (*malloc)(void**, size_t);
  cudaError_t (*free)(void*);
  cudaError_t (*mem_get_info)(size_t*, size_t*);
  cudaError_t (*device_synchronize)();
  cudaError_t (*malloc_from_pool_async)(void**, size_t, cudaMemPool_t, cudaStream_t);
  cudaError_t (*malloc_from_pool_async_ptsz)(void**, size_t, cudaMemPool_t, cudaStream_t);
  cudaError_t (*malloc_managed)(void**, size_t, unsigned int);
  cudaError_t (*malloc_pitch)(void**, size_t*, size_t, size_t);
  cudaError_t (*malloc_3d)(cudaPitchedPtr*, cudaExtent);
  CUresult (*cu_stream_create)(CUstream*, unsigned int);
  CUresult (*cu_stream_destroy)(CUstream);
  int (*stats)(int, gpuslack_device_stats*);
  unsigned long long (*trim)(int);
};

template <typename Fn>
void find(void* h, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(h, name));
  ASSERT_NE(nullptr, *fn) << name;
}

const Hooks& hooks() {
  static Hooks g = [] {
    Hooks l{};
    void* h = in_process::gpuslack("allocator:vmm,text_summary:off,json_summary:false");
    EXPECT_NE(nullptr, h) << dlerror();
    find(h, "cudaMalloc", &l.malloc);
    find(h, "cudaFree", &l.free);
    find(h, "cudaMemGetInfo", &l.mem_get_info);
    find(h, "cudaDeviceSynchronize", &l.device_synchronize);
    find(h, "cudaMallocFromPoolAsync", &l.malloc_from_pool_async);
    find(h, "cudaMallocFromPoolAsync_ptsz", &l.malloc_from_pool_async_ptsz);
    find(h, "cudaMallocManaged", &l.malloc_managed);
    find(h, "cudaMallocPitch", &l.malloc_pitch);
    find(h, "cudaMalloc3D", &l.malloc_3d);
    find(h, "cuStreamCreate", &l.cu_stream_create);
    find(h, "cuStreamDestroy_v2", &l.cu_stream_destroy);
    find(h, "gpuslack_device_stats_get", &l.stats);
    find(h, "gpuslack_trim", &l.trim);
    return l;
  }();
  return g;
}

// Starts a test on an empty device, whatever ran before it in this process.
class VmmFreeMemory : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(nullptr, hooks().malloc);
    ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
    hooks().trim(-1);
    ASSERT_EQ(cudaSuccess, cudaGetLastError());
    ASSERT_EQ(0u, gpusim_device_used(0));
  }

  size_t free_mib() {
    size_t free_bytes = 0, total = 0;
    EXPECT_EQ(cudaSuccess, hooks().mem_get_info(&free_bytes, &total));
    EXPECT_EQ(8 * kGiB, total);
    return free_bytes / kMiB;
  }

  // `n` blocks of `bytes` from the VMM allocator (through the cudaMalloc hook).
  std::vector<void*> allocate(int n, size_t bytes) {
    std::vector<void*> blocks;
    for (int i = 0; i < n; ++i) {
      void* p = nullptr;
      EXPECT_EQ(cudaSuccess, hooks().malloc(&p, bytes)) << i;
      blocks.push_back(p);
    }
    return blocks;
  }
  void free_all(const std::vector<void*>& blocks) {
    for (void* p : blocks) EXPECT_EQ(cudaSuccess, hooks().free(p));
  }

  gpuslack_device_stats stats() {
    gpuslack_device_stats s{};
    EXPECT_EQ(0, hooks().stats(0, &s));
    return s;
  }

  // The whole device into the VMM allocator's blocks, freed again: the
  // allocator holds all of it, mapped, and the runtime has none.
  void hold_the_whole_device() {
    free_all(allocate(8, kGiB));
    size_t free_bytes = 0, total = 0;
    ASSERT_EQ(cudaSuccess, cudaMemGetInfo(&free_bytes, &total));  // the runtime's own
    ASSERT_EQ(0u, free_bytes);
  }
};

TEST_F(VmmFreeMemory, EverythingFreedAndSynchronizedIsFree) {
  std::vector<void*> blocks = allocate(8, kGiB);
  EXPECT_EQ(0u, free_mib());
  free_all(blocks);
  ASSERT_EQ(cudaSuccess, hooks().device_synchronize());
  EXPECT_EQ(8192u, free_mib());  // the runtime alone: 8192; main: 0
}

TEST_F(VmmFreeMemory, SixGiBFreedAreFreeAndSevenAndAHalfGiBFitWithoutTheOutOfMemoryPath) {
  std::vector<void*> blocks = allocate(6, kGiB);
  EXPECT_EQ(2048u, free_mib());
  free_all(blocks);
  ASSERT_EQ(cudaSuccess, hooks().device_synchronize());
  EXPECT_EQ(8192u, free_mib());  // main: 2048
  // The freed 6 GiB are reused, still mapped: only 1.5 GiB more is mapped,
  // with no failed mapping, trim or wait first.
  gpuslack_device_stats before = stats();
  void* big = nullptr;
  ASSERT_EQ(cudaSuccess, hooks().malloc(&big, 7 * kGiB + kGiB / 2));
  gpuslack_device_stats s = stats();
  EXPECT_EQ(before.oom_retries, s.oom_retries);  // main: one more
  EXPECT_EQ(before.stall_s, s.stall_s);
  EXPECT_EQ(before.granules_unmapped, s.granules_unmapped);
  EXPECT_EQ(before.granules_mapped + 768, s.granules_mapped);  // 1.5 GiB of 2 MiB granules
  EXPECT_EQ(7 * kGiB + kGiB / 2, s.reserved);
  EXPECT_EQ(512u, free_mib());
  EXPECT_EQ(cudaSuccess, hooks().free(big));
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
}

TEST_F(VmmFreeMemory, FreesPendingOnABusyStreamCountAsFreeWithoutWaiting) {
  std::vector<void*> blocks = allocate(6, kGiB);
  // A kernel still uses the first block when everything is freed: the
  // frees' fences cannot pass before it ends.
  volatile int status = 0;
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(nullptr, blocks[0], 4096, 2000000, 7, &status));
  free_all(blocks);
  EXPECT_EQ(8192u, free_mib());  // counted at once ...
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(nullptr));  // ... without waiting for the kernel
  EXPECT_EQ(6u, stats().pending_free);
  // An allocation that needs them waits for the kernel, then gets them.
  void* big = nullptr;
  ASSERT_EQ(cudaSuccess, hooks().malloc(&big, 7 * kGiB + kGiB / 2));
  EXPECT_EQ(1, status);  // the kernel's block was not handed out under it
  EXPECT_EQ(0L, gpusim_busy_kernel_violations());
  EXPECT_EQ(7 * kGiB + kGiB / 2, stats().reserved);  // reused where they lay, still mapped
  EXPECT_EQ(cudaSuccess, hooks().free(big));
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
}

// A stream a driver-API library made (cuStreamCreate, non-blocking) is
// fenced like the runtime's: a block freed while a kernel on it still uses
// the block is not handed out, and written, under the kernel (issue 18).
TEST_F(VmmFreeMemory, AFreeWaitsForAKernelOnADriverStream) {
  CUstream s = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, hooks().cu_stream_create(&s, CU_STREAM_NON_BLOCKING));
  void* block = nullptr;
  ASSERT_EQ(cudaSuccess, hooks().malloc(&block, 64 * kMiB));
  volatile int status = 0;
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s, block, 4096, 300000, 9, &status));
  ASSERT_EQ(cudaSuccess, hooks().free(block));
  // The same size again, and written at once on the legacy stream (which a
  // non-blocking stream's kernel does not wait for): a block still under
  // the kernel would be a violation.
  void* again = nullptr;
  ASSERT_EQ(cudaSuccess, hooks().malloc(&again, 64 * kMiB));
  ASSERT_EQ(cudaSuccess, cudaMemset(again, 0x11, 4096));
  ASSERT_EQ(CUDA_SUCCESS, hooks().cu_stream_destroy(s));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  EXPECT_EQ(1, status);
  EXPECT_EQ(0L, gpusim_busy_kernel_violations());
  EXPECT_EQ(cudaSuccess, hooks().free(again));
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
}

TEST_F(VmmFreeMemory, PoolAllocationGetsMemoryGpuslackHolds) {
  hold_the_whole_device();
  void* p = nullptr;
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaSuccess, cudaDeviceGetDefaultMemPool(&pool, 0));
  EXPECT_EQ(cudaSuccess, hooks().malloc_from_pool_async(&p, 512 * kMiB, pool, nullptr));  // main: out of memory
  EXPECT_EQ(cudaSuccess, cudaGetLastError());  // as after one successful call
  EXPECT_NE(nullptr, p);
  EXPECT_EQ(cudaSuccess, cudaFreeAsync(p, nullptr));
  EXPECT_EQ(cudaSuccess, cudaStreamSynchronize(nullptr));
}

TEST_F(VmmFreeMemory, EveryPassThroughAllocationGetsMemoryGpuslackHolds) {
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaSuccess, cudaDeviceGetDefaultMemPool(&pool, 0));
  void* p = nullptr;
  hold_the_whole_device();
  EXPECT_EQ(cudaSuccess, hooks().malloc_from_pool_async_ptsz(&p, 512 * kMiB, pool, nullptr));
  EXPECT_EQ(cudaSuccess, cudaFreeAsync(p, cudaStreamPerThread));
  EXPECT_EQ(cudaSuccess, cudaStreamSynchronize(cudaStreamPerThread));
  hold_the_whole_device();
  EXPECT_EQ(cudaSuccess, hooks().malloc_managed(&p, 512 * kMiB, cudaMemAttachGlobal));
  EXPECT_EQ(cudaSuccess, cudaFree(p));
  hold_the_whole_device();
  size_t pitch = 0;
  EXPECT_EQ(cudaSuccess, hooks().malloc_pitch(&p, &pitch, 4096, 1024 * 128));
  EXPECT_EQ(cudaSuccess, cudaFree(p));
  hold_the_whole_device();
  cudaPitchedPtr pp{};
  EXPECT_EQ(cudaSuccess, hooks().malloc_3d(&pp, cudaExtent{4096, 1024, 128}));
  EXPECT_EQ(cudaSuccess, cudaFree(pp.ptr));
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
}

TEST_F(VmmFreeMemory, AnErrorPendingBeforeARetriedCallStaysPending) {
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaSuccess, cudaDeviceGetDefaultMemPool(&pool, 0));
  void* p = nullptr;
  // Out of memory pending (read never): the retry keeps it.
  hold_the_whole_device();
  void* none = nullptr;
  ASSERT_EQ(cudaErrorMemoryAllocation, cudaMalloc(&none, 64 * kGiB));  // the runtime's own
  EXPECT_EQ(cudaSuccess, hooks().malloc_from_pool_async(&p, 512 * kMiB, pool, nullptr));
  EXPECT_EQ(cudaErrorMemoryAllocation, cudaGetLastError());
  EXPECT_EQ(cudaSuccess, cudaFreeAsync(p, nullptr));
  EXPECT_EQ(cudaSuccess, cudaStreamSynchronize(nullptr));
  // Any other error pending: the memory is released before the one call.
  hold_the_whole_device();
  ASSERT_EQ(cudaErrorInvalidValue, cudaDriverGetVersion(nullptr));
  EXPECT_EQ(cudaSuccess, hooks().malloc_from_pool_async(&p, 512 * kMiB, pool, nullptr));
  EXPECT_EQ(cudaErrorInvalidValue, cudaGetLastError());
  EXPECT_EQ(cudaSuccess, cudaFreeAsync(p, nullptr));
  EXPECT_EQ(cudaSuccess, cudaStreamSynchronize(nullptr));
}

TEST_F(VmmFreeMemory, ARetryThatStillFailsLeavesTheRuntimesAnswer) {
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaSuccess, cudaDeviceGetDefaultMemPool(&pool, 0));
  void* p = nullptr;
  hold_the_whole_device();
  // More than the device has: the retry fails as the first call did.
  EXPECT_EQ(cudaErrorMemoryAllocation, hooks().malloc_from_pool_async(&p, 9 * kGiB, pool, nullptr));
  EXPECT_EQ(cudaErrorMemoryAllocation, cudaGetLastError());
  EXPECT_EQ(8192u, free_mib());  // released, not lost
  // Nothing held: the runtime's one answer, unchanged.
  EXPECT_EQ(cudaErrorMemoryAllocation, hooks().malloc_from_pool_async(&p, 9 * kGiB, pool, nullptr));
  EXPECT_EQ(cudaErrorMemoryAllocation, cudaGetLastError());
  EXPECT_EQ(cudaErrorInvalidValue, hooks().malloc_from_pool_async(nullptr, kMiB, pool, nullptr));
  EXPECT_EQ(cudaErrorInvalidValue, cudaGetLastError());
}

}  // namespace
