// The VMM allocator through the hooks and the C API, in process: cudaMalloc
// and cudaFree routed to it, its figures from gpuslack_device_stats_get,
// cached memory given back by gpuslack_trim.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "gpuslack/gpuslack.h"

namespace {

struct Gpuslack {
  cudaError_t (*malloc)(void**, size_t);
  cudaError_t (*free)(void*);
  int (*stats)(int, gpuslack_device_stats*);
  unsigned long long (*trim)(int);
  cudaError_t (*ipc_get)(cudaIpcMemHandle_t*, void*);
  void* (*device_alloc)(ssize_t, int, CUstream_st*);
  void (*device_free)(void*, size_t, int, CUstream_st*);
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
    l.device_alloc = reinterpret_cast<decltype(l.device_alloc)>(dlsym(h, "gpuslack_device_alloc"));
    l.device_free = reinterpret_cast<decltype(l.device_free)>(dlsym(h, "gpuslack_device_free"));
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
  // The trim fences and waits for the free itself. (A small allocation
  // first would map a small-pool granule of its own and, past the growth
  // ceiling, give the freed 10 MiB back before the trim: Note [The small
  // pool apart] in lib/alloc/block_manager.h.)
  cudaDeviceSynchronize();
  EXPECT_GE(g.trim(-1), 8ull << 20);  // the freed 10 MiB, whole granules
  ASSERT_EQ(0, g.stats(0, &s));
  EXPECT_LE(s.reserved, 2u << 20);
  EXPECT_GE(s.granules_unmapped, 4u);
  void* small = nullptr;
  ASSERT_EQ(cudaSuccess, g.malloc(&small, 512));
  cudaIpcMemHandle_t ipc;
  EXPECT_EQ(cudaSuccess, g.ipc_get(&ipc, small));  // gpuslack's handle (alloc/block_ipc.h)
  EXPECT_EQ(cudaErrorInvalidValue, g.ipc_get(&ipc, static_cast<char*>(small) + 256));  // inside: refused
  EXPECT_EQ(cudaSuccess, g.free(small));
  EXPECT_EQ(cudaSuccess, g.free(nullptr));
}

// The C API under a capture that no hook saw begin (dlopen'd RTLD_LOCAL:
// the test calls the simulated runtime directly), as torch's
// CUDAPluggableAllocator drives it (Note [Capture without hooks]): nothing
// it does invalidates the capture, a block that needs new memory gets it
// (never NULL), and no block the graph uses goes to another allocation
// afterwards, freed during the capture or after it.
TEST(VmmCApi, CaptureWithoutHooks) {
  const Gpuslack& g = lib();
  ASSERT_NE(nullptr, g.device_alloc);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto* cs = reinterpret_cast<CUstream_st*>(s);
  const size_t n = 1 << 20;
  void* warm = g.device_alloc(n, 0, cs);  // memory mapped before, freed at once
  ASSERT_NE(nullptr, warm);
  g.device_free(warm, n, 0, cs);
  ASSERT_EQ(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  void* tmp = g.device_alloc(n, 0, cs);       // the warm block, cached on s
  void* big = g.device_alloc(64 << 20, 0, cs);  // more than is mapped: maps during the capture
  void* out = g.device_alloc(n, 0, cs);
  EXPECT_NE(nullptr, tmp);
  EXPECT_NE(nullptr, big);
  EXPECT_NE(nullptr, out);
  ASSERT_EQ(cudaSuccess, cudaMemsetAsync(big, 1, 64 << 20, s));
  g.device_free(tmp, n, 0, cs);
  g.device_free(big, 64 << 20, 0, cs);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  ASSERT_EQ(cudaSuccess, cudaStreamIsCapturing(s, &status));
  EXPECT_EQ(cudaStreamCaptureStatusActive, status);  // not invalidated
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaSuccess, cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaSuccess, cudaGraphInstantiate(&exec, graph, 0));
  ASSERT_EQ(cudaSuccess, cudaGraphLaunch(exec, s));
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  g.device_free(out, n, 0, cs);  // freed after the capture: still the graph's
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  auto inside = [&](void* p, void* block, size_t bytes) {
    auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(block);
    return a < b + bytes && b < a + n;  // [p, p + n) overlaps the block
  };
  std::vector<void*> after;
  for (int i = 0; i < 6; ++i) {
    void* p = g.device_alloc(n, 0, i % 2 ? cs : nullptr);
    ASSERT_NE(nullptr, p);
    EXPECT_FALSE(inside(p, tmp, n) || inside(p, big, 64 << 20) || inside(p, out, n))
        << "a block of the graph went to allocation " << i << " after the capture: " << p << " tmp " << tmp
        << " big " << big << " out " << out << " warm " << warm;
    after.push_back(p);
  }
  for (size_t i = 0; i < after.size(); ++i) g.device_free(after[i], n, 0, i % 2 ? cs : nullptr);
  gpuslack_device_stats st{};
  ASSERT_EQ(0, g.stats(0, &st));
  EXPECT_EQ(0u, st.failed_allocations);
  EXPECT_GE(st.pending_free, 3u) << "tmp, big and out stay the graph's while it lives";
  // The graph and its executable gone, their user object gives the held
  // blocks back: trim fences and waits for them, then releases their memory
  // (big's 64 MiB among it; the rest cached here is 7 MiB).
  ASSERT_EQ(cudaSuccess, cudaGraphExecDestroy(exec));
  ASSERT_EQ(cudaSuccess, cudaGraphDestroy(graph));
  EXPECT_GE(g.trim(-1), 64ull << 20);
  ASSERT_EQ(0, g.stats(0, &st));
  EXPECT_EQ(0u, st.pending_free);
  cudaStreamDestroy(s);
}

}  // namespace
