// What a hook adds to a call: the same CUDA runtime functions called
// directly and through libgpuslack.so's hooks, side by side in one process.
//
// The calls are answered at once by the runtime, so the difference is the
// hook's own cost: the session check, two clock reads, the ledger's record
// (a few stores to the thread's own shard) and, for calls that can block, an
// NVTX push and pop (no tool attached). All are called through function
// pointers, so the direct path gets no inlining advantage.
//   cudaMemGetInfo   - a query: no NVTX range;
//   cudaFree(NULL)   - an allocation-category call: with its NVTX range;
//   cudaStreamSynchronize on an idle stream - a sync-category call.
// BM_Clock_* time the two clocks a hook could read (it reads rdtsc).
//
// Run: build/bench/hook_overhead_bench (links the simulated libcudart; the
// hooks forward to it exactly as they would to the real one).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <x86intrin.h>

#include <ctime>

#include <cstdio>
#include <cstdlib>

namespace {

void* gpuslack() {
  static void* h = [] {
    void* handle = dlopen(GPUSLACK_SO, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      std::fprintf(stderr, "hook_overhead_bench: %s\n", dlerror());
      std::exit(1);
    }
    return handle;
  }();
  return h;
}

template <typename Fn>
Fn hook(const char* name) {
  return reinterpret_cast<Fn>(dlsym(gpuslack(), name));
}

using MemGetInfo = cudaError_t (*)(size_t*, size_t*);
using Free = cudaError_t (*)(void*);
using StreamSync = cudaError_t (*)(cudaStream_t);

template <typename Fn>
Fn direct(Fn f) {
  static Fn volatile keep = f;  // a pointer the compiler cannot see through
  return keep;
}

void BM_MemGetInfo_Direct(benchmark::State& state) {
  MemGetInfo f = direct<MemGetInfo>(&cudaMemGetInfo);
  size_t a, b;
  for (auto _ : state) benchmark::DoNotOptimize(f(&a, &b));
}
void BM_MemGetInfo_ThroughHook(benchmark::State& state) {
  MemGetInfo f = hook<MemGetInfo>("cudaMemGetInfo");
  size_t a, b;
  if (f(&a, &b) != cudaSuccess) state.SkipWithError("hook did not forward");
  for (auto _ : state) benchmark::DoNotOptimize(f(&a, &b));
}
void BM_FreeNull_Direct(benchmark::State& state) {
  Free f = direct<Free>(&cudaFree);
  for (auto _ : state) benchmark::DoNotOptimize(f(nullptr));
}
void BM_FreeNull_ThroughHook(benchmark::State& state) {
  Free f = hook<Free>("cudaFree");
  for (auto _ : state) benchmark::DoNotOptimize(f(nullptr));
}

cudaStream_t idle_stream() {
  static cudaStream_t s = [] {
    cudaStream_t st;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    return st;
  }();
  return s;
}
void BM_StreamSyncIdle_Direct(benchmark::State& state) {
  StreamSync f = direct<StreamSync>(&cudaStreamSynchronize);
  cudaStream_t s = idle_stream();
  for (auto _ : state) benchmark::DoNotOptimize(f(s));
}
void BM_StreamSyncIdle_ThroughHook(benchmark::State& state) {
  StreamSync f = hook<StreamSync>("cudaStreamSynchronize");
  cudaStream_t s = idle_stream();
  for (auto _ : state) benchmark::DoNotOptimize(f(s));
}

// The two clocks a hook could read.
void BM_Clock_Rdtsc(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(__rdtsc());
}
void BM_Clock_ClockGettime(benchmark::State& state) {
  timespec ts;
  for (auto _ : state) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    benchmark::DoNotOptimize(ts);
  }
}
BENCHMARK(BM_Clock_Rdtsc);
BENCHMARK(BM_Clock_ClockGettime);

// Each pair runs interleaved, direct first, so drift hits both alike.
BENCHMARK(BM_MemGetInfo_Direct);
BENCHMARK(BM_MemGetInfo_ThroughHook);
BENCHMARK(BM_FreeNull_Direct);
BENCHMARK(BM_FreeNull_ThroughHook);
BENCHMARK(BM_StreamSyncIdle_Direct);
BENCHMARK(BM_StreamSyncIdle_ThroughHook);
BENCHMARK(BM_MemGetInfo_Direct)->Threads(8);
BENCHMARK(BM_MemGetInfo_ThroughHook)->Threads(8);

// The benchmark measures hooks, not summaries: none at exit.
const bool kQuiet = [] { return setenv("GPUSLACK_CONF", "json_summary:false,text_summary:off", 0) == 0; }();

}  // namespace

BENCHMARK_MAIN();
