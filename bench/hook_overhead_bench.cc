// What a hook adds to a call: the same CUDA runtime function called directly
// and through libgpuslack.so's hook, side by side in one process.
//
// The function is cudaFree(nullptr), which the runtime answers at once, so
// the difference is the hook's own cost (a cached-address load, a null check
// and an indirect call). Both are called through function pointers so the
// direct path gets no inlining advantage.
//
// Run: build/bench/hook_overhead_bench (links the simulated libcudart; the
// hook forwards to it exactly as it would to the real one).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace {

using FreeFn = cudaError_t (*)(void*);

// The runtime's own cudaFree (this program links libcudart).
FreeFn direct() {
  static FreeFn volatile f = &cudaFree;
  return f;
}

FreeFn hooked() {
  static FreeFn f = [] {
    void* h = dlopen(GPUSLACK_SO, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      std::fprintf(stderr, "hook_overhead_bench: %s\n", dlerror());
      std::exit(1);
    }
    return reinterpret_cast<FreeFn>(dlsym(h, "cudaFree"));
  }();
  return f;
}

void BM_CudaFreeNull_Direct(benchmark::State& state) {
  FreeFn f = direct();
  for (auto _ : state) benchmark::DoNotOptimize(f(nullptr));
}
BENCHMARK(BM_CudaFreeNull_Direct);

void BM_CudaFreeNull_ThroughHook(benchmark::State& state) {
  FreeFn f = hooked();
  if (f(nullptr) != cudaSuccess) state.SkipWithError("hook did not forward");
  for (auto _ : state) benchmark::DoNotOptimize(f(nullptr));
}
BENCHMARK(BM_CudaFreeNull_ThroughHook);

void BM_CudaFreeNull_ThroughHook_8Threads(benchmark::State& state) {
  FreeFn f = hooked();
  for (auto _ : state) benchmark::DoNotOptimize(f(nullptr));
}
BENCHMARK(BM_CudaFreeNull_ThroughHook_8Threads)->Threads(8);

void BM_CudaFreeNull_Direct_8Threads(benchmark::State& state) {
  FreeFn f = direct();
  for (auto _ : state) benchmark::DoNotOptimize(f(nullptr));
}
BENCHMARK(BM_CudaFreeNull_Direct_8Threads)->Threads(8);

}  // namespace

BENCHMARK_MAIN();
