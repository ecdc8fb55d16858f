// The pinned heap against the runtime's own pinned allocation, in one run on
// the simulated device (bench/README.md, "pinned_bench"):
//   BM_Chunk_HostAlloc         - one 64 MiB chunk the way the heap takes it:
//                                cudaHostAlloc(Portable | Mapped), then
//                                cudaFreeHost;
//   BM_Chunk_MmapRegister      - the alternative: mmap, cudaHostRegister
//                                (Portable | Mapped), cudaHostUnregister,
//                                munmap (Note [Pinned chunks] says which the
//                                heap uses and why);
//   BM_MallocHostFree_Native   - cudaMallocHost + cudaFreeHost pairs of the
//                                (simulated) runtime;
//   BM_MallocHostFree_Gpuslack - the same calls through libgpuslack.so's
//                                hooks (pin on, its default), 1 and 8 threads;
//   BM_HostAlloc_Native, BM_HostAlloc_Gpuslack
//                              - cudaHostAlloc(Mapped) + cudaFreeHost pairs,
//                                4 KiB to 64 MiB.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>

#include "gpuslack/gpuslack.h"

namespace {

constexpr size_t kChunk = 64ull << 20;
constexpr unsigned kChunkFlags = cudaHostAllocPortable | cudaHostAllocMapped;

void BM_Chunk_HostAlloc(benchmark::State& state) {
  for (auto _ : state) {
    void* p = nullptr;
    if (cudaHostAlloc(&p, kChunk, kChunkFlags) != cudaSuccess) state.SkipWithError("cudaHostAlloc");
    cudaFreeHost(p);
  }
}
BENCHMARK(BM_Chunk_HostAlloc)->Unit(benchmark::kMillisecond);

void BM_Chunk_MmapRegister(benchmark::State& state) {
  for (auto _ : state) {
    void* p = mmap(nullptr, kChunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED || cudaHostRegister(p, kChunk, cudaHostRegisterPortable | cudaHostRegisterMapped) != cudaSuccess)
      state.SkipWithError("mmap + cudaHostRegister");
    cudaHostUnregister(p);
    munmap(p, kChunk);
  }
}
BENCHMARK(BM_Chunk_MmapRegister)->Unit(benchmark::kMillisecond);

using MallocHostFn = cudaError_t (*)(void**, size_t);
using HostAllocFn = cudaError_t (*)(void**, size_t, unsigned int);
using FreeHostFn = cudaError_t (*)(void*);

// libgpuslack.so, opened once with the pinned heap on and no summary.
void* gpuslack() {
  static void* h = [] {
    setenv("GPUSLACK_CONF", "pin:true,text_summary:off,json_summary:false", 1);
    void* handle = dlopen(GPUSLACK_SO, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      std::fprintf(stderr, "pinned_bench: %s\n", dlerror());
      std::exit(1);
    }
    return handle;
  }();
  return h;
}

// The heap's peak pinned bytes so far, as a counter (MiB).
void heap_counters(benchmark::State& state) {
  auto get = reinterpret_cast<int (*)(gpuslack_pinned_stats*)>(dlsym(gpuslack(), "gpuslack_pinned_stats_get"));
  gpuslack_pinned_stats s{};
  if (state.thread_index() == 0 && get && get(&s) == 0) {
    state.counters["peak_pinned_MiB"] = static_cast<double>(s.peak_pinned >> 20);
    state.counters["allocations"] = static_cast<double>(s.allocations);
  }
}

void pairs(benchmark::State& state, MallocHostFn m, FreeHostFn f) {
  size_t bytes = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = nullptr;
    if (m(&p, bytes) != cudaSuccess) state.SkipWithError("cudaMallocHost");
    f(p);
  }
}

void host_alloc_pairs(benchmark::State& state, HostAllocFn a, FreeHostFn f) {
  size_t bytes = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = nullptr;
    if (a(&p, bytes, cudaHostAllocMapped) != cudaSuccess) state.SkipWithError("cudaHostAlloc");
    f(p);
  }
}

void BM_MallocHostFree_Native(benchmark::State& state) { pairs(state, &cudaMallocHost, &cudaFreeHost); }
BENCHMARK(BM_MallocHostFree_Native)->Arg(64 << 10)->Arg(8 << 20)->Unit(benchmark::kMicrosecond);

void BM_MallocHostFree_Gpuslack(benchmark::State& state) {
  pairs(state, reinterpret_cast<MallocHostFn>(dlsym(gpuslack(), "cudaMallocHost")),
        reinterpret_cast<FreeHostFn>(dlsym(gpuslack(), "cudaFreeHost")));
  heap_counters(state);
}
BENCHMARK(BM_MallocHostFree_Gpuslack)->Arg(64 << 10)->Arg(8 << 20)->Threads(1)->Threads(8)
    ->Unit(benchmark::kMicrosecond);

void BM_HostAlloc_Native(benchmark::State& state) { host_alloc_pairs(state, &cudaHostAlloc, &cudaFreeHost); }
BENCHMARK(BM_HostAlloc_Native)->RangeMultiplier(8)->Range(4 << 10, 64 << 20)->Unit(benchmark::kMicrosecond);

void BM_HostAlloc_Gpuslack(benchmark::State& state) {
  host_alloc_pairs(state, reinterpret_cast<HostAllocFn>(dlsym(gpuslack(), "cudaHostAlloc")),
                   reinterpret_cast<FreeHostFn>(dlsym(gpuslack(), "cudaFreeHost")));
  heap_counters(state);
}
BENCHMARK(BM_HostAlloc_Gpuslack)->RangeMultiplier(8)->Range(4 << 10, 64 << 20)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
