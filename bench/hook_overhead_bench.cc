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
// BM_LaunchKernel_*: cudaLaunchKernel, a counted hook (interpose/
// launch_hook_table.h: no clock, no ledger row; one thread-local count and
// a tail call), with a null kernel, which the runtime refuses at once
// (cudaErrorInvalidDeviceFunction, the same answer both ways), so that the
// difference is the hook's own cost. Budget: 15 ns.
//
// BM_AllReduce_*: an NCCL collective (1-rank communicator, one float,
// simulated NCCL at its default costs) directly and through the hook. The
// hook times one call in collective_timing_every (default 8) of each
// operation on each thread, with two events around it: each call is timed
// here with rdtscp and filed by its position modulo 8, so one run gives the
// untimed call (the mean of the 7 other positions), the timed call (the
// slowest position) and the amortized average (the benchmark's own time,
// manual: the same per-call figures). The stream is synchronized every 64
// calls, outside the measured time, so that the simulated queue stays short;
// the (cold) call after each synchronization counts in the average but is
// not filed by position.
//
// Run: build/bench/hook_overhead_bench (links the simulated libcudart; the
// hooks forward to it exactly as they would to the real one).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <x86intrin.h>

#include <chrono>
#include <ctime>

#include <cstdio>
#include <cstdlib>

namespace {

void* gpuslack() {
  static void* h = [] {
    // GPUSLACK_SO in the environment: another build's library (before/after
    // comparisons with the same benchmark binary).
    const char* so = std::getenv("GPUSLACK_SO");
    void* handle = dlopen(so && *so ? so : GPUSLACK_SO, RTLD_NOW | RTLD_LOCAL);
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

using LaunchKernel = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);

void launch_kernel(benchmark::State& state, LaunchKernel f) {
  const void* no_kernel = nullptr;
  if (f(no_kernel, dim3(1), dim3(1), nullptr, 0, nullptr) != cudaErrorInvalidDeviceFunction)
    state.SkipWithError("the launch did not reach the runtime");
  for (auto _ : state) benchmark::DoNotOptimize(f(no_kernel, dim3(1), dim3(1), nullptr, 0, nullptr));
  cudaGetLastError();
}
void BM_LaunchKernel_Direct(benchmark::State& state) {
  launch_kernel(state, direct<LaunchKernel>(&cudaLaunchKernel));
}
void BM_LaunchKernel_ThroughHook(benchmark::State& state) {
  LaunchKernel f = hook<LaunchKernel>("cudaLaunchKernel");
  if (!f) return state.SkipWithError("no cudaLaunchKernel hook");
  launch_kernel(state, f);
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
// ---- NCCL: one collective, direct and through the hook ----

using AllReduce = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                   cudaStream_t);

struct OneRank {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void* buf = nullptr;
};
const OneRank& one_rank() {
  static OneRank o = [] {
    OneRank r;
    int dev = 0;
    if (ncclCommInitAll(&r.comm, 1, &dev) != ncclSuccess || cudaStreamCreate(&r.stream) != cudaSuccess ||
        cudaMalloc(&r.buf, 64) != cudaSuccess) {
      std::fprintf(stderr, "hook_overhead_bench: no 1-rank NCCL communicator\n");
      std::exit(1);
    }
    return r;
  }();
  return o;
}

// Nanoseconds per rdtsc tick, against the steady clock over 20 ms.
double ns_per_tick() {
  static double v = [] {
    auto t0 = std::chrono::steady_clock::now();
    uint64_t c0 = __rdtsc();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(20)) {
    }
    uint64_t c1 = __rdtsc();
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    return ns / static_cast<double>(c1 - c0);
  }();
  return v;
}

void all_reduce(benchmark::State& state, AllReduce f) {
  const OneRank& o = one_rank();
  const double k = ns_per_tick();
  constexpr int kPhases = 8;  // collective_timing_every's default
  uint64_t ticks[kPhases] = {}, calls[kPhases] = {};
  uint64_t i = 0;
  unsigned aux;
  for (auto _ : state) {
    uint64_t t0 = __rdtscp(&aux);
    ncclResult_t r = f(o.buf, o.buf, 1, ncclFloat32, ncclSum, o.comm, o.stream);
    uint64_t t1 = __rdtscp(&aux);
    benchmark::DoNotOptimize(r);
    if (i % 64 != 0) {  // the call after a synchronization is cold: not filed
      ticks[i % kPhases] += t1 - t0;
      ++calls[i % kPhases];
    }
    state.SetIterationTime(static_cast<double>(t1 - t0) * k * 1e-9);
    if (++i % 64 == 0) cudaStreamSynchronize(o.stream);
  }
  cudaStreamSynchronize(o.stream);
  int slowest = 0;
  double mean[kPhases];
  for (int p = 0; p < kPhases; ++p) {
    mean[p] = calls[p] ? static_cast<double>(ticks[p]) / static_cast<double>(calls[p]) * k : 0;
    if (mean[p] > mean[slowest]) slowest = p;
  }
  double others = 0;
  for (int p = 0; p < kPhases; ++p)
    if (p != slowest) others += mean[p] / (kPhases - 1);
  state.counters["slowest_of_8_ns"] = mean[slowest];  // through the hook: the timed call
  state.counters["other_7_ns"] = others;              // through the hook: the untimed calls
}
void BM_AllReduce_Direct(benchmark::State& state) { all_reduce(state, direct<AllReduce>(&ncclAllReduce)); }
void BM_AllReduce_ThroughHook(benchmark::State& state) {
  AllReduce f = hook<AllReduce>("ncclAllReduce");
  if (!f) state.SkipWithError("no ncclAllReduce hook");
  all_reduce(state, f);
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
BENCHMARK(BM_LaunchKernel_Direct);
BENCHMARK(BM_LaunchKernel_ThroughHook);
BENCHMARK(BM_LaunchKernel_Direct);
BENCHMARK(BM_LaunchKernel_ThroughHook);
BENCHMARK(BM_MemGetInfo_Direct)->Threads(8);
BENCHMARK(BM_MemGetInfo_ThroughHook)->Threads(8);
BENCHMARK(BM_AllReduce_Direct)->UseManualTime();
BENCHMARK(BM_AllReduce_ThroughHook)->UseManualTime();

// The benchmark measures hooks, not summaries: none at exit.
const bool kQuiet = [] { return setenv("GPUSLACK_CONF", "json_summary:false,text_summary:off", 0) == 0; }();

}  // namespace

BENCHMARK_MAIN();
