// The VMM allocator through the hooks and the C API, in process: cudaMalloc
// and cudaFree routed to it, its figures from gpuslack_device_stats_get,
// cached memory given back by gpuslack_trim.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "gpuslack/gpuslack.h"

namespace {

struct Gpuslack {
  cudaError_t (*malloc)(void**, size_t);
  cudaError_t (*free)(void*);
  int (*stats)(int, gpuslack_device_stats*);
  unsigned long long (*trim)(int);
  cudaError_t (*ipc_get)(cudaIpcMemHandle_t*, void*);
};

const Gpuslack& lib() {
  static Gpuslack g = [] {
    // One granule per physical handle: trim's figures below count granules
    // released one by one (chunks: tests/lib/alloc/granule_map_test.cc).
    setenv("GPUSLACK_CONF", "allocator:vmm,map_chunk_mb:2,text_summary:off,json_summary:false", 1);
    void* h = dlopen(GPUSLACK_SO, RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(nullptr, h) << dlerror();
    Gpuslack l;
    l.malloc = reinterpret_cast<decltype(l.malloc)>(dlsym(h, "cudaMalloc"));
    l.free = reinterpret_cast<decltype(l.free)>(dlsym(h, "cudaFree"));
    l.stats = reinterpret_cast<decltype(l.stats)>(dlsym(h, "gpuslack_device_stats_get"));
    l.trim = reinterpret_cast<decltype(l.trim)>(dlsym(h, "gpuslack_trim"));
    l.ipc_get = reinterpret_cast<decltype(l.ipc_get)>(dlsym(h, "cudaIpcGetMemHandle"));
    return l;
  }();
  return g;
}

TEST(VmmCApi, StatsAndTrim) {
  const Gpuslack& g = lib();
  gpuslack_device_stats s{};
  EXPECT_EQ(-1, g.stats(0, &s));  // not serving yet
  void* p = nullptr;
  ASSERT_EQ(cudaSuccess, g.malloc(&p, 10 << 20));
  cudaPointerAttributes attr;
  ASSERT_EQ(cudaSuccess, cudaPointerGetAttributes(&attr, p));
  EXPECT_EQ(cudaMemoryTypeDevice, attr.type);  // VMM memory is device memory
  ASSERT_EQ(0, g.stats(0, &s));
  EXPECT_EQ(10u << 20, s.allocated);
  EXPECT_GE(s.reserved, 10u << 20);
  EXPECT_EQ(1u, s.allocations);
  ASSERT_EQ(cudaSuccess, g.free(p));
  EXPECT_EQ(cudaErrorInvalidValue, g.free(p));  // twice
  void* small = nullptr;
  ASSERT_EQ(cudaSuccess, g.malloc(&small, 512));  // fences the free
  cudaDeviceSynchronize();
  EXPECT_GE(g.trim(-1), 8ull << 20);  // the freed 10 MiB, whole granules
  ASSERT_EQ(0, g.stats(0, &s));
  EXPECT_LE(s.reserved, 2u << 20);
  EXPECT_GE(s.granules_unmapped, 4u);
  cudaIpcMemHandle_t ipc;
  EXPECT_EQ(cudaErrorInvalidValue, g.ipc_get(&ipc, small));  // VMM memory: refused, not a bad handle
  EXPECT_EQ(cudaSuccess, g.free(small));
  EXPECT_EQ(cudaSuccess, g.free(nullptr));
}

}  // namespace
