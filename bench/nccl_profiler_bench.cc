// What NCCL's profiler plugin inside libgpuslack.so costs NCCL's threads per
// collective (issue 26, point 8; bench/README.md, "nccl_profiler_bench"):
// the callbacks NCCL makes for one collective, in its order, called as NCCL
// calls them (through the version's adaptors, nccl/profiler_versions.h):
//   v5/v6: the group event (no handle), the collective's API event (no
//   handle), its coll event started and stopped on the host, then per
//   channel a kernel channel event started, given its KernelChStop and
//   stopped (NCCL's proxy or profiler thread);
//   v2: the coll event only (no kernel channels before v4's timestamps).
// Without the plugin NCCL makes none of these calls (it tests a null
// pointer), so these times are what the plugin adds. Budget: 1 µs per
// collective. Threads(8): eight communicators on eight threads at once, the
// rows and rings shared (Note [Profiler slots]).
//
// Run: build/bench/nccl_profiler_bench
#include <benchmark/benchmark.h>

#include <cstdint>

#include "nccl/profiler_abi.h"
#include "nccl/profiler_records.h"
#include "nccl/profiler_versions.h"

namespace {

namespace abi = gpuslack::nccl::abi;
namespace p = gpuslack::nccl::profiler;

void BM_PerCollective_V5(benchmark::State& state) {
  const int channels = static_cast<int>(state.range(0));
  if (state.thread_index() == 0) p::reset();
  void* ctx = nullptr;
  int mask = 0;
  p::v5::init(&ctx, 0x1000 + static_cast<uint64_t>(state.thread_index()), &mask, "bench", 1, 8,
              state.thread_index(), nullptr);
  abi::EventDescrV5 group{};
  group.type = abi::kProfileGroup;
  abi::EventDescrV5 api{};
  api.type = abi::kProfileCollApi;
  api.collApi.func = "AllReduce";
  abi::EventDescrV5 coll{};
  coll.type = abi::kProfileColl;
  coll.coll.func = "AllReduce";
  coll.coll.count = 1 << 20;
  coll.coll.datatype = "ncclFloat32";
  coll.coll.algo = "RING";
  coll.coll.proto = "SIMPLE";
  coll.coll.nChannels = static_cast<uint8_t>(channels);
  uint64_t t = 1000;
  for (auto _ : state) {
    void* g = nullptr;
    void* a = nullptr;
    void* c = nullptr;
    p::v5::start_event(ctx, &g, &group);
    p::v5::start_event(ctx, &a, &api);
    p::v5::start_event(ctx, &c, &coll);
    p::stop_event(c);
    for (int ch = 0; ch < channels; ++ch) {
      abi::EventDescrV5 k{};
      k.type = abi::kProfileKernelCh;
      k.parentObj = c;
      k.kernelCh.channelId = static_cast<uint8_t>(ch);
      k.kernelCh.pTimer = t;
      void* kh = nullptr;
      p::v5::start_event(ctx, &kh, &k);
      abi::StateArgsV5 s{};
      s.kernelCh.pTimer = t + 5000;
      p::v5::record_event_state(kh, abi::kKernelChStop, &s);
      p::stop_event(kh);
    }
    t += 10000;
    benchmark::DoNotOptimize(c);
  }
  p::finalize(ctx);
  if (state.thread_index() == 0) {
    p::Snapshot s = p::snapshot();
    state.counters["dropped"] = static_cast<double>(s.dropped);
  }
}
BENCHMARK(BM_PerCollective_V5)->Arg(1)->Arg(8)->Arg(32);
BENCHMARK(BM_PerCollective_V5)->Arg(8)->Threads(8)->UseRealTime();

void BM_PerCollective_V2(benchmark::State& state) {
  if (state.thread_index() == 0) p::reset();
  void* ctx = nullptr;
  int mask = 0;
  p::v2::init(&ctx, &mask);
  abi::EventDescrV2 coll{};
  coll.type = abi::kProfileColl;
  coll.coll.commHash = 0x2000 + static_cast<uint64_t>(state.thread_index());
  coll.coll.func = "AllReduce";
  coll.coll.count = 1 << 20;
  coll.coll.datatype = "ncclFloat32";
  coll.coll.algo = "RING";
  coll.coll.proto = "SIMPLE";
  coll.coll.nMaxChannels = 8;
  for (auto _ : state) {
    void* c = nullptr;
    p::v2::start_event(ctx, &c, &coll);
    p::stop_event(c);
    benchmark::DoNotOptimize(c);
  }
  p::finalize(ctx);
}
BENCHMARK(BM_PerCollective_V2);
BENCHMARK(BM_PerCollective_V2)->Threads(8)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
