// The GPU timeline's analysis (lib/timeline/timeline_analysis.h): CPU cost
// per GPU activity record processed, on the timeline's worker (issue 15's
// target: <= 50 ns amortized). No CUDA: synthetic records in host ticks.
//
// Each iteration feeds 1M records the way CUPTI delivers them: buffers of
// 4096 records, each buffer one stream's records in order, buffers of the
// streams interleaved (so records arrive out of order across buffers).
// The work is kernels of a few names (some shorter than 10 us; with launch
// shapes, one name in three shapes, and an H100's limits), copies,
// memsets, with gaps between them, on 2 devices; host blocked calls on 4
// threads (one per ~2000 records), a step mark every 10000 records; a
// commit every 16 buffers at the latest time before which every stream has
// delivered (the lagged flush time the worker commits at), and at the end a
// final commit and a fill of every device's figures. Counted: everything,
// the analysis's allocations included; not counted: making the records.
//
//   BM_Analysis/1   one stream per device (records in order)
//   BM_Analysis/4   four streams per device, interleaved buffers
//   BM_Decode       the step before: one CUPTI record struct (Kernel11 with
//                   its grid, block, registers and shared memory,
//                   Memcpy6, Memset4, in CUPTI 13.2's layout) decoded into a
//                   GpuActivity (timeline/record_decoder.h), kinds mixed as
//                   above; CUPTI's own cuptiActivityGetNextRecord not counted
//
// A record's cost on the worker is BM_Decode's plus BM_Analysis's.
// ns_per_record is CPU time per record (the worker's cost; wall time on a
// loaded machine adds other processes' turns). Results: bench/README.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <new>
#include <cstdint>
#include <random>
#include <vector>

#include "ledger/api_call.h"
#include "ledger/host_activity.h"
#include "timeline/gpu_activity.h"
#include "timeline/record_decoder.h"
#include "timeline/timeline_analysis.h"

namespace {

using gpuslack::ApiCall;
using gpuslack::Category;
using gpuslack::ledger::HostInterval;
using gpuslack::timeline::AnalysisOptions;
using gpuslack::timeline::Busy;
using gpuslack::timeline::DeviceTimeline;
using gpuslack::timeline::GpuActivity;
using gpuslack::timeline::TimelineAnalysis;

constexpr size_t kRecords = 1 << 20;
constexpr size_t kBuffer = 4096;
constexpr uint64_t kTicksPerUs = 1000;  // 1 tick = 1 ns

const ApiCall kFree{1, "cudaFree", Category::kAllocation};
const ApiCall kSync{2, "cudaStreamSynchronize", Category::kSync};
const ApiCall kCopy{3, "cudaMemcpy", Category::kCopy};

const char* const kNames[] = {
    "_Z4gemmILi128ELi64EEvPKfS1_Pfiii", "_Z7softmaxIfEvPKT_PS0_i", "_Z9layernormPKfPfS1_S1_i",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "_Z4reluPfi"};

struct Feed {
  std::vector<std::vector<GpuActivity>> buffers;  // in delivery order
  std::vector<uint64_t> watermark_after;          // per buffer: commit here (0: no commit)
  std::vector<HostInterval> hosts;
  std::vector<uint64_t> steps;
  uint64_t end = 0;
};

Feed make_feed(int streams_per_device) {
  constexpr int kDevices = 2;
  const int streams = kDevices * streams_per_device;
  std::mt19937_64 rng(42);
  std::vector<std::vector<GpuActivity>> per_stream(static_cast<size_t>(streams));
  std::vector<uint64_t> clock(static_cast<size_t>(streams), 0);
  for (size_t i = 0; i < kRecords; ++i) {
    const size_t s = i % static_cast<size_t>(streams);
    GpuActivity a;
    a.device = static_cast<int>(s) % kDevices;
    const uint64_t r = rng() % 100;
    uint64_t len;
    if (r < 80) {
      a.kind = r < 5 ? Busy::kCommunication : Busy::kCompute;
      const size_t name = rng() % 6;
      a.name = kNames[name];
      // Launch shapes as CUPTI's records give them: one per name, the
      // gemm in three (timeline/kernel_table.h matches the last first).
      a.shape.blocks = name == 0 ? 64u << (rng() % 3) : 128u * (name + 1);
      a.shape.threads_per_block = name == 0 ? 384 : 256;
      a.shape.registers_per_thread = name == 0 ? 168 : 32;
      a.shape.shared_bytes_per_block = name == 0 ? 192u << 10 : 0;
      len = r % 3 == 0 ? 2 * kTicksPerUs + rng() % (6 * kTicksPerUs) : 10 * kTicksPerUs + rng() % (200 * kTicksPerUs);
    } else if (r < 95) {
      a.kind = Busy::kCopies;
      len = 5 * kTicksPerUs + rng() % (100 * kTicksPerUs);
    } else {
      a.kind = Busy::kMemsets;
      len = 1 * kTicksPerUs + rng() % (5 * kTicksPerUs);
    }
    // Gaps: mostly a few us (launch-bound), sometimes long (host-bound).
    const uint64_t gap = rng() % 20 == 0 ? rng() % (500 * kTicksPerUs) : rng() % (5 * kTicksPerUs);
    a.start_ticks = clock[s] + gap;
    a.end_ticks = a.start_ticks + len;
    clock[s] = a.end_ticks;
    per_stream[s].push_back(a);
  }
  Feed f;
  std::vector<size_t> next(static_cast<size_t>(streams), 0);
  std::vector<uint64_t> delivered(static_cast<size_t>(streams), 0);  // start of the next undelivered record
  for (bool more = true; more;) {
    more = false;
    for (size_t s = 0; s < per_stream.size(); ++s) {
      if (next[s] >= per_stream[s].size()) continue;
      const size_t n = std::min(kBuffer, per_stream[s].size() - next[s]);
      f.buffers.emplace_back(per_stream[s].begin() + static_cast<std::ptrdiff_t>(next[s]),
                             per_stream[s].begin() + static_cast<std::ptrdiff_t>(next[s] + n));
      next[s] += n;
      delivered[s] = next[s] < per_stream[s].size() ? per_stream[s][next[s]].start_ticks : UINT64_MAX;
      more = true;
      const uint64_t w = *std::min_element(delivered.begin(), delivered.end());
      f.watermark_after.push_back(f.buffers.size() % 16 == 0 && w != UINT64_MAX ? w : 0);
    }
  }
  for (uint64_t c : clock) f.end = std::max(f.end, c);
  const ApiCall* calls[] = {&kFree, &kSync, &kCopy};
  for (size_t i = 0; i < kRecords / 2000; ++i) {
    HostInterval h;
    h.start_ticks = rng() % f.end;
    h.end_ticks = h.start_ticks + rng() % (300 * kTicksPerUs);
    h.call = calls[i % 3];
    h.tid = static_cast<int>(i % 4) + 1;
    h.site_key = i % 7;
    f.hosts.push_back(h);
  }
  std::sort(f.hosts.begin(), f.hosts.end(), [](const auto& a, const auto& b) { return a.end_ticks < b.end_ticks; });
  for (uint64_t t = 0; t < f.end; t += f.end / (kRecords / 10000)) f.steps.push_back(t);
  return f;
}

void BM_Analysis(benchmark::State& state) {
  const Feed feed = make_feed(static_cast<int>(state.range(0)));
  AnalysisOptions o;
  o.start_ticks = 0;
  o.launch_bound_gap_ticks = 20 * kTicksPerUs;
  o.short_kernel_ticks = 10 * kTicksPerUs;
  o.device_limits = [](int, gpuslack::timeline::DeviceLimits* l) {
    *l = gpuslack::timeline::h100_limits();
    return true;
  };
  std::vector<DeviceTimeline> out;
  for (auto _ : state) {
    TimelineAnalysis a(o);
    size_t host = 0, step = 0;
    for (size_t b = 0; b < feed.buffers.size(); ++b) {
      for (const GpuActivity& r : feed.buffers[b]) a.add(r);
      const uint64_t w = feed.watermark_after[b];
      if (w == 0) continue;
      // The host activity drained with the flush: what ended by then.
      for (; host < feed.hosts.size() && feed.hosts[host].end_ticks <= w; ++host) a.add(feed.hosts[host]);
      for (; step < feed.steps.size() && feed.steps[step] <= w; ++step) a.add_step(feed.steps[step]);
      a.commit(w);
    }
    for (; host < feed.hosts.size(); ++host) a.add(feed.hosts[host]);
    for (; step < feed.steps.size(); ++step) a.add_step(feed.steps[step]);
    a.commit(feed.end, true);
    a.fill(feed.end, 1e-9, nullptr, &out);
    benchmark::DoNotOptimize(out.data());
    if (a.late_records() != 0) state.SkipWithError("late records: the feed's watermarks are wrong");
  }
  state.counters["ns_per_record"] = benchmark::Counter(
      static_cast<double>(kRecords) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetItemsProcessed(static_cast<int64_t>(kRecords) * state.iterations());
}
BENCHMARK(BM_Analysis)->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond);

void BM_Decode(benchmark::State& state) {
  // 4096 records packed one after the other in one buffer, as CUPTI fills
  // its buffers: kernels, copies and memsets, mixed at random.
  constexpr size_t kRecords = 4096;
  std::vector<uint64_t> buffer(kRecords * sizeof(CUpti_ActivityKernel11) / sizeof(uint64_t) + 1);
  auto* at = reinterpret_cast<uint8_t*>(buffer.data());
  std::vector<const CUpti_Activity*> records;
  static const char* const kNames[] = {"_Z4gemmPfS_", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "_Z7softmaxv"};
  std::mt19937 rng(7);
  for (size_t i = 0; i < kRecords; ++i) {
    const uint64_t t = 1000 * i;
    records.push_back(reinterpret_cast<const CUpti_Activity*>(at));
    switch (rng() % 4) {
      case 0: {
        auto* c = new (at) CUpti_ActivityMemcpy6{};
        c->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        c->start = t;
        c->end = t + 500;
        c->deviceId = i % 2;
        at += sizeof(*c);
        break;
      }
      case 1: {
        auto* m = new (at) CUpti_ActivityMemset4{};
        m->kind = CUPTI_ACTIVITY_KIND_MEMSET;
        m->start = t;
        m->end = t + 200;
        m->deviceId = i % 2;
        at += sizeof(*m);
        break;
      }
      default: {
        auto* k = new (at) CUpti_ActivityKernel11{};
        k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k->start = t;
        k->end = t + 900;
        k->deviceId = i % 2;
        k->name = kNames[rng() % 3];
        k->gridX = 128, k->gridY = 8, k->gridZ = 1;
        k->blockX = 256, k->blockY = k->blockZ = 1;
        k->registersPerThread = 168;
        k->staticSharedMemory = 1024;
        k->dynamicSharedMemory = 65536;
        at += sizeof(*k);
      }
    }
  }
  gpuslack::timeline::GpuActivity out;
  for (auto _ : state) {
    for (const CUpti_Activity* r : records) {
      benchmark::DoNotOptimize(gpuslack::timeline::decode_record(r, &out));
      benchmark::DoNotOptimize(out);
    }
  }
  state.counters["ns_per_record"] = benchmark::Counter(
      static_cast<double>(records.size()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Decode);

}  // namespace

BENCHMARK_MAIN();
