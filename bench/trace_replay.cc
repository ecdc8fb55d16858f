// trace_replay: replays allocation traces through gpuslack's VMM allocator
// core (alloc::DeviceAllocator) on the simulated device, and prints per
// trace what it cost in physical memory, beside the ideal and, where the
// trace records it, PyTorch's caching allocator on the same requests.
//
//   trace_replay [--tsv] [--verbose] [--stop-at-failure] [--cache-limit-mb N] [--map-chunk-mb N] STREAM...
//
// Each STREAM is an event stream from bench/replay/trace_events.py
// (bench/replay/event_stream.h); bench/replay/run.sh converts and replays
// every trace of ../shared/traces and is the usual way in. One row per
// stream, a Markdown table (--tsv: tab-separated, sizes in bytes, for
// scripts and tests; --verbose: the allocator's figures after every event,
// on stderr). Each stream gets a fresh allocator over the device, made as
// libgpuslack.so makes one: reservation 1.125x device memory, cache limit
// and chunk size from GPUSLACK_CONF (cache_limit_mb, map_chunk_mb; a bad
// value gets the library's one-line error and the default); the flags
// --cache-limit-mb and --map-chunk-mb override them. GPUSIM_DEVICE_MEMORY is
// the simulated device's size (run.sh: 80G); on a device too small for a
// trace the allocator's out-of-memory path runs, stalls and, at worst,
// fails allocations, which are counted (a failed allocation's block is
// simply never freed; --stop-at-failure ends a trace's replay at its first
// failed allocation, which is all bench/replay/peers.py --pressure asks).
// The simulated driver backs physical memory with slices of one sparse
// memfd (tests/simcuda/driver_vmm_backing.h) that this program never
// touches, so no page is faulted in and no descriptor is opened per
// handle, whatever the sizes.
//
// Streams: each distinct stream of the trace gets a real one (0: the legacy
// stream; any other: cudaStreamCreate, blocking); a block is allocated on
// its trace stream and freed, stream-ordered, on the stream it was
// allocated on, as PyTorch's allocator frees. The replay's GPU and its
// bound: Note [The replay's GPU] in replay/replay_gpu.h.
//
// Columns: ideal = the peak of live requested bytes (a lower bound for any
// allocator); peak allocated = DeviceStats::peak_allocated (512-byte
// rounded); peak reserved = the peak of mapped physical memory;
// utilization = peak allocated / peak reserved (the definition);
// granules = physical granules mapped / unmapped over the replay;
// chunks = the physical handles mapped / unmapped (cuMemCreate + cuMemMap,
// or cuMemMap alone for a moved page, resp. cuMemUnmap + cuMemRelease or
// cuMemUnmap alone; one cuMemSetAccess per mapped run; pages of
// map_chunk_mb:20 by default, 2: one granule each; GranuleMap's notes in
// lib/alloc/granule_map.h). Then what pressure and streams cost:
// failed allocations; stall = DeviceStats::stall_s (waiting for every
// pending free before failing); fence waits = bounded waits for one pending
// fence on a miss (served: a completed fence then served it) and their
// seconds; out-of-memory retries; epochs (event sets recorded); stream
// reuses (served from a block freed on the same stream); device / stream /
// event synchronizations the allocator made (gpusim_calls, the replay's
// own excluded) and (--tsv) the events it recorded; streams of the trace; GPU timeouts (allocator calls that
// waited for the held GPU past ReplayGpu::kCallBound); cross-stream reuses
// (an allocation on one stream given memory last freed on another) and, of
// those, unfenced ones: memory freed on another stream with no event
// recorded between the free and this allocation call, so that none could
// show the GPU done with it (0 unless the allocator hands blocks across
// streams before a fence; an event recorded during the call itself
// completes only at the next settle).
// --tsv adds what bench/replay/peers.py sets beside PyTorch's allocator:
// the median and p99 of one allocate() and one free() call (steady_clock
// around the call alone, in ns), and the driver calls the replay made, as
// the simulated device counts them (driver_calls: "cuMemCreate=N,...").
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "alloc/device_allocator.h"
#include "config/options.h"
#include "cuda/driver_api.h"
#include "replay/event_stream.h"
#include "replay/replay_gpu.h"

namespace {

using gpuslack::alloc::DeviceAllocator;
using gpuslack::alloc::DeviceStats;
using gpuslack::bench::Event;
using gpuslack::bench::ReplayGpu;
using gpuslack::bench::Trace;

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "trace_replay: %s\n", why.c_str());
  std::exit(1);
}

// The calls the simulated device counts (gpusim_calls in
// tests/simcuda/gpusim.h), found at run time: on a real driver there is
// none. The first kNumDriver give or take memory; then the waits, and the
// event records (the fences).
constexpr const char* kCounted[] = {"cudaMalloc", "cudaFree", "cuMemCreate", "cuMemRelease", "cuMemMap",
                                    "cuMemUnmap", "cuMemSetAccess", "cuMemAddressReserve", "cuMemAddressFree",
                                    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
                                    "cudaEventRecord"};
constexpr size_t kNumCounted = sizeof kCounted / sizeof kCounted[0];
constexpr size_t kNumDriver = 9;
constexpr size_t kDeviceSync = 9, kStreamSync = 10, kEventSync = 11, kEventRecord = 12;
struct CallCounts {
  long n[kNumCounted] = {};
};
using CountFn = long (*)(const char*);
CountFn count_fn() {
  static CountFn fn = reinterpret_cast<CountFn>(dlsym(RTLD_DEFAULT, "gpusim_calls"));
  return fn;
}
long event_records() { return count_fn() ? std::max(0L, count_fn()("cudaEventRecord")) : 0; }
CallCounts call_counts() {
  CountFn fn = count_fn();
  CallCounts c;
  for (size_t i = 0; fn && i < kNumCounted; ++i) c.n[i] = std::max(0L, fn(kCounted[i]));
  return c;
}

// Memory freed and not yet handed out again, by address: on which stream,
// and how many events had been recorded when its free began (the
// cross-stream check: the columns above).
struct Freed {
  uint64_t end;
  cudaStream_t stream;
  long records_before;
};

struct Result {
  uint64_t allocs = 0, frees = 0, failed = 0;
  uint64_t ideal_peak = 0;  // peak of live requested bytes
  DeviceStats stats;
  std::vector<uint64_t> alloc_ns, free_ns;  // each call, sorted after the replay
  CallCounts calls;                         // made during the replay (the allocator's destruction excluded)
  size_t streams = 0;
  uint64_t gpu_timeouts = 0;
  uint64_t cross_stream = 0, cross_stream_unfenced = 0;
};

uint64_t percentile(const std::vector<uint64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * static_cast<double>(sorted.size())))];
}

// What each allocator is made with.
struct Settings {
  uint64_t reserve = 0, cache_limit = 0, map_chunk = 0;
};

// Counts an allocation of [p, p + bytes) on `stream` against the memory
// freed before it, and forgets what it overlaps (now live again).
// `records_before`: the events recorded when the allocation call began.
void check_reuse(std::map<uintptr_t, Freed>* freed, uintptr_t p, uint64_t bytes, cudaStream_t stream,
                 long records_before, bool gpu_finished_during_call, Result* r) {
  auto it = freed->upper_bound(p);
  if (it != freed->begin() && std::prev(it)->second.end > p) --it;
  bool across = false, unfenced = false;
  while (it != freed->end() && it->first < p + std::max<uint64_t>(bytes, 1)) {
    if (it->second.stream != stream) {
      across = true;
      // No event recorded from the free's start to this call's: none can
      // show the GPU done with the block (one recorded during this call
      // completes at the next settle), unless the GPU finished by itself.
      if (it->second.records_before == records_before && !gpu_finished_during_call) unfenced = true;
    }
    it = freed->erase(it);
  }
  r->cross_stream += across;
  r->cross_stream_unfenced += unfenced;
}

Result replay(const Trace& t, const Settings& cfg, bool verbose, bool stop_at_failure) {
  Result r;
  using SteadyClock = std::chrono::steady_clock;
  auto ns_since = [](SteadyClock::time_point t0) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - t0).count());
  };
  const CallCounts calls_before = call_counts();
  ReplayGpu gpu;  // first: its streams outlive the allocator
  DeviceAllocator a(gpuslack::cuda::driver(), 0, cfg.reserve, cfg.cache_limit, cfg.map_chunk);
  if (!a.ok()) die("no VMM allocator: " + a.why());
  std::vector<void*> ptr(t.blocks, nullptr);
  std::vector<uint64_t> size(t.blocks, 0);
  std::vector<cudaStream_t> on(t.blocks, nullptr);
  std::map<uintptr_t, Freed> freed;
  uint64_t live = 0;
  if (!gpu.hold()) die("cudaLaunchHostFunc failed: cannot model the GPU");
  for (const Event& e : t.events) {
    if (e.kind == Event::kAlloc) {
      std::optional<cudaStream_t> stream = gpu.stream(e.stream);
      if (!stream) die("cudaStreamCreate failed for the trace's stream " + std::to_string(e.stream));
      ++r.allocs;
      size[e.id] = e.size;
      on[e.id] = *stream;
      live += e.size;
      if (live > r.ideal_peak) r.ideal_peak = live;
      if (!gpu.settle()) die("cudaLaunchHostFunc failed: cannot model the GPU");
      // Stream-ordered, as PyTorch and RMM allocate: a block freed on the
      // stream comes back at once for the same stream.
      const uint64_t timeouts = gpu.timeouts();
      const long records = event_records();
      gpu.call_begins();
      auto t0 = SteadyClock::now();
      ptr[e.id] = a.allocate(e.size, *stream);
      r.alloc_ns.push_back(ns_since(t0));
      gpu.call_ends();
      if (ptr[e.id])
        check_reuse(&freed, reinterpret_cast<uintptr_t>(ptr[e.id]), e.size, *stream, records,
                    gpu.timeouts() != timeouts, &r);
      else
        ++r.failed;
      if (r.failed && stop_at_failure) break;
    } else {
      ++r.frees;
      live -= size[e.id];
      if (ptr[e.id]) {
        const long records = event_records();
        gpu.call_begins();
        auto t0 = SteadyClock::now();
        bool ok = a.free(ptr[e.id], on[e.id]);
        r.free_ns.push_back(ns_since(t0));
        gpu.call_ends();
        if (!ok) die("the allocator refused to free block " + std::to_string(e.id));
        uintptr_t p = reinterpret_cast<uintptr_t>(ptr[e.id]);
        freed[p] = Freed{p + std::max<uint64_t>(size[e.id], 1), on[e.id], records};
      }
    }
    if (verbose) {
      DeviceStats s = a.stats();
      std::fprintf(stderr, "%c %llu size=%llu live=%llu allocated=%llu reserved=%llu pending_blocks=%llu\n",
                   e.kind == Event::kAlloc ? 'a' : 'f', (unsigned long long)e.id,
                   (unsigned long long)size[e.id], (unsigned long long)live, (unsigned long long)s.allocated,
                   (unsigned long long)s.reserved, (unsigned long long)s.pending_free);
    }
  }
  gpu.let_go();
  r.stats = a.stats();
  const CallCounts calls_after = call_counts();
  for (size_t i = 0; i < kNumCounted; ++i) r.calls.n[i] = calls_after.n[i] - calls_before.n[i];
  r.calls.n[kDeviceSync] = std::max(0L, r.calls.n[kDeviceSync] - gpu.device_syncs());  // the model's own
  r.streams = gpu.streams();
  r.gpu_timeouts = gpu.timeouts();
  std::sort(r.alloc_ns.begin(), r.alloc_ns.end());
  std::sort(r.free_ns.begin(), r.free_ns.end());
  return r;
}

std::string human(uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(1ull << 30));
  else if (bytes >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / double(1ull << 20));
  else std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
  return buf;
}

double ratio(uint64_t a, uint64_t b) { return b ? double(a) / double(b) : 0.0; }

using ull = unsigned long long;

void print_header(bool tsv) {
  if (tsv) {
    std::printf("trace\tevents\tideal_peak\tpeak_allocated\tpeak_reserved\tutilization\tgranules_mapped\t"
                "granules_unmapped\tpytorch_peak_reserved\tfailed\talloc_median_ns\talloc_p99_ns\tfree_median_ns\t"
                "free_p99_ns\tdriver_calls\tstall_s\tfence_waits\tfence_waits_served\tfence_wait_s\toom_retries\t"
                "epochs\tstream_reuses\tdevice_syncs\tstream_syncs\tevent_syncs\tevent_records\tstreams\tgpu_timeouts\t"
                "cross_stream_reuses\tcross_stream_unfenced\n");
    return;
  }
  std::printf("| trace | events | ideal (peak live) | peak allocated | peak reserved | utilization | "
              "granules mapped / unmapped | chunks mapped / unmapped | PyTorch peak reserved | "
              "reserved vs PyTorch | failed | stall | fence waits (served) | OOM retries | epochs | "
              "stream reuses | syncs device / stream / event | driver calls |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
}

void print_row(const Trace& t, const Result& r, bool tsv) {
  const DeviceStats& s = r.stats;
  double util = ratio(s.peak_allocated, s.peak_reserved);
  long driver = 0;
  for (size_t i = 0; i < kNumDriver; ++i) driver += r.calls.n[i];
  if (tsv) {
    std::string calls;
    for (size_t i = 0; i < kNumDriver; ++i)
      if (r.calls.n[i]) calls += (calls.empty() ? "" : ",") + std::string(kCounted[i]) + "=" + std::to_string(r.calls.n[i]);
    std::printf("%s\t%zu\t%llu\t%llu\t%llu\t%.4f\t%llu\t%llu\t%s\t%llu\t%llu\t%llu\t%llu\t%llu\t%s\t"
                "%.6f\t%llu\t%llu\t%.6f\t%llu\t%llu\t%llu\t%ld\t%ld\t%ld\t%ld\t%zu\t%llu\t%llu\t%llu\n",
                t.name.c_str(), t.events.size(), (ull)r.ideal_peak, (ull)s.peak_allocated, (ull)s.peak_reserved,
                util, (ull)s.granules_mapped, (ull)s.granules_unmapped,
                t.pytorch_peak_reserved ? std::to_string(*t.pytorch_peak_reserved).c_str() : "-", (ull)r.failed,
                (ull)percentile(r.alloc_ns, 0.5), (ull)percentile(r.alloc_ns, 0.99),
                (ull)percentile(r.free_ns, 0.5), (ull)percentile(r.free_ns, 0.99),
                calls.empty() ? "-" : calls.c_str(), s.stall_s, (ull)s.fence_waits, (ull)s.fence_waits_served,
                s.fence_wait_s, (ull)s.oom_retries, (ull)s.epochs, (ull)s.stream_reuses, r.calls.n[kDeviceSync],
                r.calls.n[kStreamSync], r.calls.n[kEventSync], r.calls.n[kEventRecord], r.streams, (ull)r.gpu_timeouts,
                (ull)r.cross_stream, (ull)r.cross_stream_unfenced);
    return;
  }
  std::string pytorch = "—", versus = "—";
  if (t.pytorch_peak_reserved) {
    pytorch = human(*t.pytorch_peak_reserved);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3fx", ratio(s.peak_reserved, *t.pytorch_peak_reserved));
    versus = buf;
  }
  std::printf("| %s | %zu | %s | %s | %s | %.1f%% | %llu / %llu | %llu / %llu | %s | %s | %llu | %.3f s | "
              "%llu (%llu), %.3f s | %llu | %llu | %llu | %ld / %ld / %ld | %ld |\n",
              t.name.c_str(), t.events.size(), human(r.ideal_peak).c_str(), human(s.peak_allocated).c_str(),
              human(s.peak_reserved).c_str(), 100 * util, (ull)s.granules_mapped, (ull)s.granules_unmapped,
              (ull)s.chunks_mapped, (ull)s.chunks_unmapped, pytorch.c_str(), versus.c_str(), (ull)r.failed,
              s.stall_s, (ull)s.fence_waits, (ull)s.fence_waits_served, s.fence_wait_s, (ull)s.oom_retries,
              (ull)s.epochs, (ull)s.stream_reuses, r.calls.n[kDeviceSync], r.calls.n[kStreamSync],
              r.calls.n[kEventSync], driver);
}

const char kUsage[] =
    "usage: trace_replay [--tsv] [--verbose] [--stop-at-failure] [--cache-limit-mb N] [--map-chunk-mb N] STREAM...";

}  // namespace

int main(int argc, char** argv) {
  // As libgpuslack.so reads them (alloc/process_allocators.cc); a bad
  // GPUSLACK_CONF gets its one-line error here, and the default.
  const gpuslack::Options& options = gpuslack::options();
  Settings cfg;
  cfg.cache_limit = static_cast<uint64_t>(options.cache_limit_mb) << 20;
  cfg.map_chunk = static_cast<uint64_t>(options.map_chunk_mb) << 20;
  bool tsv = false, verbose = false, stop_at_failure = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--tsv") tsv = true;
    else if (arg == "--verbose") verbose = true;
    else if (arg == "--stop-at-failure") stop_at_failure = true;
    else if (arg == "--cache-limit-mb" && i + 1 < argc) cfg.cache_limit = std::strtoull(argv[++i], nullptr, 10) << 20;
    else if (arg == "--map-chunk-mb" && i + 1 < argc) cfg.map_chunk = std::strtoull(argv[++i], nullptr, 10) << 20;
    else if (!arg.empty() && arg[0] == '-') die(kUsage);
    else files.push_back(arg);
  }
  if (files.empty()) die(kUsage);
  if (cudaSetDevice(0) != cudaSuccess) die("no CUDA device");
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) die("cudaMemGetInfo failed");
  cfg.reserve = total + total / 8;  // as libgpuslack.so reserves (alloc/process_allocators.cc)

  print_header(tsv);
  for (const std::string& file : files) {
    std::ifstream in(file);
    if (!in) die(file + ": cannot open");
    Trace t;
    std::string error;
    if (!gpuslack::bench::read_trace(in, &t, &error)) die(file + ": " + error);
    Result r = replay(t, cfg, verbose, stop_at_failure);
    print_row(t, r, tsv);
    std::fflush(stdout);
  }
  return 0;
}
