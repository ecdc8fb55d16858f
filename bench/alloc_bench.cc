// The VMM allocator's latency, side by side with the native calls, in one
// run on the simulated device:
//   BM_BlockManager_Pair      - an alloc+free pair in the block manager alone
//                               (no CUDA): the cached path's bookkeeping;
//   BM_DeviceAllocator_Pair   - the same through DeviceAllocator (mutex,
//                               epochs: the next allocation after a free
//                               records the epoch's event);
//   BM_DeviceAllocator_StreamPair
//                             - a stream-ordered pair (allocate(bytes, s),
//                               free(p, s)): the cached path, the block
//                               freed on the stream taken back by it; with
//                               1 and 8 threads (each its own stream, one
//                               allocator: its mutex is shared);
//   BM_LockedSection<M>       - 1 and 8 threads around a short critical
//                               section under std::mutex and under the
//                               allocator's spin-then-block AllocatorMutex;
//   BM_GranuleMap_Map64MiB    - mapping then releasing 64 MiB, backed by
//                               physical chunks of 2 (one granule each),
//                               16 or 64 MiB: the driver calls' cost, on
//                               the simulated driver's cost model;
//   BM_CudaMallocFree_Native  - cudaMalloc+cudaFree of the (simulated)
//                               runtime: its modeled costs and device waits;
//   BM_CudaMallocFree_Vmm     - the same calls through libgpuslack.so's hooks
//                               with allocator:vmm.
// Sizes: 64 KiB (small pool) and 8 MiB (large).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "alloc/allocator_mutex.h"
#include "alloc/block_manager.h"
#include "alloc/device_allocator.h"
#include "alloc/granule_map.h"
#include "cuda/driver_api.h"

namespace {

using gpuslack::alloc::BlockManager;
using gpuslack::alloc::DeviceAllocator;

void BM_BlockManager_Pair(benchmark::State& state) {
  BlockManager m(1ull << 32);
  uint64_t bytes = static_cast<uint64_t>(state.range(0));
  for (auto _ : state) {
    auto at = m.allocate(bytes);
    benchmark::DoNotOptimize(at);
    m.release(*at);
  }
}
BENCHMARK(BM_BlockManager_Pair)->Arg(64 << 10)->Arg(8 << 20);

void BM_DeviceAllocator_Pair(benchmark::State& state) {
  static DeviceAllocator* a = new DeviceAllocator(gpuslack::cuda::driver(), 0, 4ull << 30, 0);
  size_t bytes = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = a->allocate(bytes);
    benchmark::DoNotOptimize(p);
    a->free(p);
  }
}
BENCHMARK(BM_DeviceAllocator_Pair)->Arg(64 << 10)->Arg(8 << 20);

void BM_DeviceAllocator_StreamPair(benchmark::State& state) {
  static DeviceAllocator* a = new DeviceAllocator(gpuslack::cuda::driver(), 0, 4ull << 30, 0);
  // A stream handle per thread: the cache is keyed by handle, and nothing
  // is enqueued on it (no event is recorded on the cached path).
  auto stream = reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(0x1000 + state.thread_index()));
  size_t bytes = static_cast<size_t>(state.range(0));
  a->free(a->allocate(bytes, stream), stream);  // warm: the block is cached
  for (auto _ : state) {
    void* p = a->allocate(bytes, stream);
    benchmark::DoNotOptimize(p);
    a->free(p, stream);
  }
}
BENCHMARK(BM_DeviceAllocator_StreamPair)->Arg(64 << 10)->Arg(8 << 20)->Threads(1)->Threads(8)
    ->Repetitions(5)->ReportAggregatesOnly(true);

// The allocator's lock against a plain std::mutex, in one run: 8 threads
// each taking it around a critical section about as long as the cached
// path's (a few dozen dependent operations on shared state).
template <typename Mutex>
void BM_LockedSection(benchmark::State& state) {
  static Mutex mu;
  static uint64_t shared[16];
  for (auto _ : state) {
    std::lock_guard<Mutex> lock(mu);
    for (int i = 0; i < 48; ++i) shared[i & 15] = shared[(i + 7) & 15] * 31 + static_cast<uint64_t>(i);
    benchmark::DoNotOptimize(shared);
  }
}
BENCHMARK_TEMPLATE(BM_LockedSection, std::mutex)->Threads(1)->Threads(8)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK_TEMPLATE(BM_LockedSection, gpuslack::alloc::AllocatorMutex)
    ->Threads(1)->Threads(8)->Repetitions(5)->ReportAggregatesOnly(true);

void BM_GranuleMap_Map64MiB(benchmark::State& state) {
  gpuslack::alloc::GranuleMap m(gpuslack::cuda::driver(), 0, 1ull << 30, static_cast<uint64_t>(state.range(0)) << 20);
  for (auto _ : state) {
    if (m.map(0, 64ull << 20) != CUDA_SUCCESS) state.SkipWithError("map failed");
    m.unmap(0, 64ull << 20);
  }
  state.counters["handles"] = static_cast<double>(m.chunks_mapped_total()) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_GranuleMap_Map64MiB)->Arg(2)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);

using MallocFn = cudaError_t (*)(void**, size_t);
using FreeFn = cudaError_t (*)(void*);

void BM_CudaMallocFree_Native(benchmark::State& state) {
  MallocFn m = &cudaMalloc;
  FreeFn f = &cudaFree;
  size_t bytes = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = nullptr;
    m(&p, bytes);
    f(p);
  }
}
BENCHMARK(BM_CudaMallocFree_Native)->Arg(64 << 10)->Arg(8 << 20);

void BM_CudaMallocFree_Vmm(benchmark::State& state) {
  static void* h = [] {
    setenv("GPUSLACK_CONF", "allocator:vmm,text_summary:off,json_summary:false", 1);
    void* handle = dlopen(GPUSLACK_SO, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      std::fprintf(stderr, "alloc_bench: %s\n", dlerror());
      std::exit(1);
    }
    return handle;
  }();
  auto m = reinterpret_cast<MallocFn>(dlsym(h, "cudaMalloc"));
  auto f = reinterpret_cast<FreeFn>(dlsym(h, "cudaFree"));
  size_t bytes = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = nullptr;
    m(&p, bytes);
    f(p);
  }
}
BENCHMARK(BM_CudaMallocFree_Vmm)->Arg(64 << 10)->Arg(8 << 20);

}  // namespace

BENCHMARK_MAIN();
