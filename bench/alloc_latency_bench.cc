// The allocator core's cached path: what one alloc+free pair costs in
// BlockManager when nothing has to be mapped (the latency target:
// median <= 100 ns per pair on 1 thread). No CUDA: BlockManager alone, the
// bookkeeping every cudaMalloc/cudaFree through the VMM allocator pays.
//
//   BM_Pair        - allocate(bytes) then release() on one thread, no lock;
//   BM_LockedPair  - the same, each call under one std::mutex shared by all
//                    threads, as DeviceAllocator holds its mu_ around
//                    BlockManager: 1 thread (an uncontended lock) and 8
//                    threads (all of them on one BlockManager).
//
// Not an empty heap: every run starts from the same realistic one (see
// make_heap: 1000 live blocks of mixed sizes, small and large, with holes
// between them), so best fit searches real free lists and a small request
// chooses among many small-pool pages. Each pair returns the heap to where
// it was (frees coalesce at once), so every iteration sees the same heap.
//
// Times are wall time per pair (UseRealTime): with 8 threads, the run's wall
// time divided by the pairs all threads made together. Medians of 5
// repetitions. Results and the machine: bench/README.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

#include "alloc/block_manager.h"

namespace {

using gpuslack::alloc::BlockManager;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

// A device-sized space (80 GiB, as an H100's reservation) holding 1000 live
// blocks: 2000 allocated, sizes log-uniform from 512 B to 1 MiB (half, the
// small pool) and from 1 MiB to 128 MiB (the other half), then every other
// one freed at random. Deterministic: the same heap in every run.
void make_heap(BlockManager& m) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> small_log2(9.0, 20.0), large_log2(20.0, 27.0);
  std::vector<uint64_t> blocks;
  for (int i = 0; i < 2000; ++i) {
    double log2 = i % 2 ? large_log2(rng) : small_log2(rng);
    auto at = m.allocate(static_cast<uint64_t>(std::exp2(log2)));
    if (!at) {
      std::fprintf(stderr, "alloc_latency_bench: the heap does not fit\n");
      std::exit(1);
    }
    blocks.push_back(*at);
  }
  std::shuffle(blocks.begin(), blocks.end(), rng);
  for (size_t i = 0; i < blocks.size() / 2; ++i) m.release(blocks[i]);
}

void BM_Pair(benchmark::State& state) {
  BlockManager m(80 * kGiB);
  make_heap(m);
  uint64_t bytes = static_cast<uint64_t>(state.range(0));
  for (auto _ : state) {
    auto at = m.allocate(bytes);
    benchmark::DoNotOptimize(at);
    m.release(*at);
  }
  state.counters["small_pages"] = static_cast<double>(m.small_pages());
  state.counters["free_ranges"] = static_cast<double>(m.large_free().count());
}

// One BlockManager behind one mutex, shared by the run's threads; thread 0
// builds it before the loop and drops it after (the benchmark library holds
// every thread at the loop's start and end).
struct Shared {
  std::mutex mu;
  BlockManager m{80 * kGiB};
};
Shared* shared = nullptr;

void BM_LockedPair(benchmark::State& state) {
  if (state.thread_index() == 0) {
    shared = new Shared;
    make_heap(shared->m);
  }
  uint64_t bytes = static_cast<uint64_t>(state.range(0));
  for (auto _ : state) {
    std::optional<uint64_t> at;
    {
      std::lock_guard<std::mutex> lock(shared->mu);
      at = shared->m.allocate(bytes);
    }
    benchmark::DoNotOptimize(at);
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->m.release(*at);
  }
  if (state.thread_index() == 0) {
    delete shared;
    shared = nullptr;
  }
}

// 512 B, 64 KiB and 1 MiB go to the small pool; 8 MiB and 64 MiB are large.
void sizes(benchmark::internal::Benchmark* b) {
  for (int64_t bytes : {int64_t{512}, int64_t{64} << 10, int64_t{1} << 20, int64_t{8} << 20, int64_t{64} << 20})
    b->Arg(bytes);
  b->UseRealTime()->Repetitions(5)->ReportAggregatesOnly(true);
}
BENCHMARK(BM_Pair)->Apply(sizes)->Threads(1);
BENCHMARK(BM_LockedPair)->Apply(sizes)->Threads(1)->Threads(8);

}  // namespace

BENCHMARK_MAIN();
