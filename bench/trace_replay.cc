// trace_replay: replays allocation traces through gpuslack's VMM allocator
// core (alloc::DeviceAllocator) on the simulated device, and prints per
// trace what it cost in physical memory, beside the ideal and, where the
// trace records it, PyTorch's caching allocator on the same requests.
//
//   trace_replay [--tsv] [--verbose] [--cache-limit-mb N] [--map-chunk-mb N] STREAM...
//
// Each STREAM is an event stream from bench/replay/trace_events.py
// (bench/replay/event_stream.h); bench/replay/run.sh converts and replays
// every trace of ../shared/traces and is the usual way in. One row per
// stream, a Markdown table (--tsv: tab-separated, sizes in bytes, for
// scripts and tests; --verbose: the allocator's figures after every event,
// on stderr). Each stream gets a fresh allocator over the device
// (reservation and cache limit as libgpuslack.so chooses them: 1.125x device
// memory, the cache_limit_mb knob, 0 by default); run it with
// GPUSIM_DEVICE_MEMORY large enough for the traces (run.sh: 80G). The
// simulated driver backs granules with memfds that this program never
// touches, so no page is faulted in whatever the sizes.
//
// Columns: ideal = the peak of live requested bytes (a lower bound for any
// allocator); peak allocated = DeviceStats::peak_allocated (512-byte
// rounded); peak reserved = the peak of mapped physical memory;
// utilization = peak allocated / peak reserved (the definition);
// granules = physical granules mapped / unmapped over the replay;
// chunks = the physical handles behind them (one cuMemCreate + cuMemMap +
// cuMemSetAccess, resp. cuMemUnmap + cuMemRelease, each; --map-chunk-mb N
// backs runs of granules with one handle of up to N MiB, as the
// map_chunk_mb knob does; 16 by default, as the knob; 2: one granule each).
// --tsv adds what bench/replay/peers.py sets beside PyTorch's allocator:
// the median and p99 of one allocate() and one free() call (steady_clock
// around the call alone, in ns), and the driver calls the replay made, as
// the simulated device counts them (gpusim_calls: "cuMemCreate=N,...").
//
// Note [The replay's GPU]: a free through the stream-less path becomes
// reusable only once events recorded behind it complete (free_epochs.h). A
// trace has no kernels, so the replay runs an idle GPU that nevertheless
// takes time: the legacy stream is held by a host function while the
// allocator runs, and released (then drained) before each allocation. So
// every event recorded during an earlier call has completed when the next
// allocation begins, and none recorded during the current call has; as on a
// real GPU, where a cudaEventQuery right after the record answers
// cudaErrorNotReady. Without the hold the result would depend on how fast
// the simulator's stream thread ran, and differ from run to run.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "alloc/device_allocator.h"
#include "cuda/driver_api.h"
#include "replay/event_stream.h"

namespace {

using gpuslack::alloc::DeviceAllocator;
using gpuslack::alloc::DeviceStats;
using gpuslack::bench::Event;
using gpuslack::bench::Trace;

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "trace_replay: %s\n", why.c_str());
  std::exit(1);
}

// The legacy stream, held between allocations (Note [The replay's GPU]).
class HeldStream {
 public:
  HeldStream() { hold(); }
  ~HeldStream() { let_go(); }
  // Lets the GPU finish all it was given, then holds it again.
  void settle() {
    let_go();
    hold();
  }

 private:
  struct Hold {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
  };
  static void CUDART_CB wait(void* arg) {
    auto* h = static_cast<Hold*>(arg);
    std::unique_lock<std::mutex> lock(h->mu);
    h->cv.wait(lock, [h] { return h->open; });
  }
  void hold() {
    hold_ = std::make_unique<Hold>();
    if (cudaLaunchHostFunc(cudaStreamLegacy, wait, hold_.get()) != cudaSuccess)
      die("cudaLaunchHostFunc failed: cannot model the GPU");
  }
  void let_go() {
    {
      std::lock_guard<std::mutex> lock(hold_->mu);
      hold_->open = true;
    }
    hold_->cv.notify_all();
    cudaDeviceSynchronize();  // the hold's function has returned: hold_ may go
    hold_.reset();
  }
  std::unique_ptr<Hold> hold_;
};

// The calls the simulated device counts (gpusim_calls in
// tests/simcuda/gpusim.h), found at run time: on a real driver there is none.
constexpr const char* kCounted[] = {"cudaMalloc", "cudaFree", "cuMemCreate", "cuMemRelease", "cuMemMap",
                                    "cuMemUnmap", "cuMemSetAccess", "cuMemAddressReserve", "cuMemAddressFree"};
constexpr size_t kNumCounted = sizeof kCounted / sizeof kCounted[0];
struct CallCounts {
  long n[kNumCounted] = {};
};
CallCounts call_counts() {
  using Fn = long (*)(const char*);
  static Fn fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gpusim_calls"));
  CallCounts c;
  for (size_t i = 0; fn && i < kNumCounted; ++i) c.n[i] = fn(kCounted[i]);
  return c;
}

struct Result {
  uint64_t allocs = 0, frees = 0, failed = 0;
  uint64_t ideal_peak = 0;  // peak of live requested bytes
  DeviceStats stats;
  std::vector<uint64_t> alloc_ns, free_ns;  // each call, sorted after the replay
  CallCounts calls;                         // made during the replay (the allocator's destruction excluded)
};

uint64_t percentile(const std::vector<uint64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * static_cast<double>(sorted.size())))];
}

Result replay(const Trace& t, uint64_t reserve, uint64_t cache_limit, uint64_t map_chunk, bool verbose) {
  Result r;
  using SteadyClock = std::chrono::steady_clock;
  auto ns_since = [](SteadyClock::time_point t0) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - t0).count());
  };
  const CallCounts calls_before = call_counts();
  DeviceAllocator a(gpuslack::cuda::driver(), 0, reserve, cache_limit, map_chunk);
  if (!a.ok()) die("no VMM allocator: " + a.why());
  std::vector<void*> ptr(t.blocks, nullptr);
  std::vector<uint64_t> size(t.blocks, 0);
  uint64_t live = 0;
  {
    HeldStream gpu;
    for (const Event& e : t.events) {
      if (e.kind == Event::kAlloc) {
        ++r.allocs;
        size[e.id] = e.size;
        live += e.size;
        if (live > r.ideal_peak) r.ideal_peak = live;
        gpu.settle();
        // Stream-ordered, as PyTorch and RMM allocate: a block freed on the
        // stream comes back at once for the same stream. Every trace event
        // goes to the legacy stream, the one the replay's GPU model holds.
        auto t0 = SteadyClock::now();
        ptr[e.id] = a.allocate(e.size, nullptr);
        r.alloc_ns.push_back(ns_since(t0));
        if (!ptr[e.id]) ++r.failed;
      } else {
        ++r.frees;
        live -= size[e.id];
        auto t0 = SteadyClock::now();
        bool freed = !ptr[e.id] || a.free(ptr[e.id], nullptr);
        r.free_ns.push_back(ns_since(t0));
        if (!freed) die("the allocator refused to free block " + std::to_string(e.id));
      }
      if (verbose) {
        DeviceStats s = a.stats();
        std::fprintf(stderr, "%c %llu size=%llu live=%llu allocated=%llu reserved=%llu pending_blocks=%llu\n",
                     e.kind == Event::kAlloc ? 'a' : 'f', (unsigned long long)e.id,
                     (unsigned long long)size[e.id], (unsigned long long)live, (unsigned long long)s.allocated,
                     (unsigned long long)s.reserved, (unsigned long long)s.pending_free);
      }
    }
  }
  r.stats = a.stats();
  const CallCounts calls_after = call_counts();
  for (size_t i = 0; i < kNumCounted; ++i) r.calls.n[i] = calls_after.n[i] - calls_before.n[i];
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

void print_row(const Trace& t, const Result& r, bool tsv) {
  const DeviceStats& s = r.stats;
  double util = ratio(s.peak_allocated, s.peak_reserved);
  if (tsv) {
    std::string calls;
    for (size_t i = 0; i < kNumCounted; ++i)
      if (r.calls.n[i]) calls += (calls.empty() ? "" : ",") + std::string(kCounted[i]) + "=" + std::to_string(r.calls.n[i]);
    std::printf("%s\t%zu\t%llu\t%llu\t%llu\t%.4f\t%llu\t%llu\t%s\t%llu\t%llu\t%llu\t%llu\t%llu\t%s\n",
                t.name.c_str(), t.events.size(), (unsigned long long)r.ideal_peak,
                (unsigned long long)s.peak_allocated, (unsigned long long)s.peak_reserved, util,
                (unsigned long long)s.granules_mapped, (unsigned long long)s.granules_unmapped,
                t.pytorch_peak_reserved ? std::to_string(*t.pytorch_peak_reserved).c_str() : "-",
                (unsigned long long)r.failed, (unsigned long long)percentile(r.alloc_ns, 0.5),
                (unsigned long long)percentile(r.alloc_ns, 0.99), (unsigned long long)percentile(r.free_ns, 0.5),
                (unsigned long long)percentile(r.free_ns, 0.99), calls.empty() ? "-" : calls.c_str());
    return;
  }
  std::string pytorch = "—", versus = "—";
  if (t.pytorch_peak_reserved) {
    pytorch = human(*t.pytorch_peak_reserved);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3fx", ratio(s.peak_reserved, *t.pytorch_peak_reserved));
    versus = buf;
  }
  std::string failed = r.failed ? " (" + std::to_string(r.failed) + " failed)" : "";
  std::printf("| %s | %zu | %s | %s | %s | %.1f%% | %llu / %llu | %llu / %llu | %s | %s |\n",
              (t.name + failed).c_str(), t.events.size(), human(r.ideal_peak).c_str(),
              human(s.peak_allocated).c_str(), human(s.peak_reserved).c_str(), 100 * util,
              (unsigned long long)s.granules_mapped, (unsigned long long)s.granules_unmapped,
              (unsigned long long)s.chunks_mapped, (unsigned long long)s.chunks_unmapped, pytorch.c_str(),
              versus.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  bool tsv = false, verbose = false;
  uint64_t cache_limit = 0, map_chunk = 16ull << 20;  // libgpuslack.so's defaults
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--tsv") tsv = true;
    else if (arg == "--verbose") verbose = true;
    else if (arg == "--cache-limit-mb" && i + 1 < argc) cache_limit = std::strtoull(argv[++i], nullptr, 10) << 20;
    else if (arg == "--map-chunk-mb" && i + 1 < argc) map_chunk = std::strtoull(argv[++i], nullptr, 10) << 20;
    else if (!arg.empty() && arg[0] == '-') die("usage: trace_replay [--tsv] [--verbose] [--cache-limit-mb N] [--map-chunk-mb N] STREAM...");
    else files.push_back(arg);
  }
  if (files.empty()) die("usage: trace_replay [--tsv] [--verbose] [--cache-limit-mb N] [--map-chunk-mb N] STREAM...");
  // The simulated driver keeps a memfd open per mapped granule: a trace
  // that maps thousands must not stop at the default soft limit of 1024.
  struct rlimit files_limit;
  if (getrlimit(RLIMIT_NOFILE, &files_limit) == 0 && files_limit.rlim_cur < files_limit.rlim_max) {
    files_limit.rlim_cur = files_limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files_limit);
  }
  if (cudaSetDevice(0) != cudaSuccess) die("no CUDA device");
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) die("cudaMemGetInfo failed");
  uint64_t reserve = total + total / 8;  // as libgpuslack.so reserves (alloc/process_allocators.cc)

  if (tsv) {
    std::printf("trace\tevents\tideal_peak\tpeak_allocated\tpeak_reserved\tutilization\tgranules_mapped\t"
                "granules_unmapped\tpytorch_peak_reserved\tfailed\talloc_median_ns\talloc_p99_ns\tfree_median_ns\t"
                "free_p99_ns\tdriver_calls\n");
  } else {
    std::printf("| trace | events | ideal (peak live) | peak allocated | peak reserved | utilization | "
                "granules mapped / unmapped | chunks mapped / unmapped | PyTorch peak reserved | "
                "reserved vs PyTorch |\n"
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  }
  for (const std::string& file : files) {
    std::ifstream in(file);
    if (!in) die(file + ": cannot open");
    Trace t;
    std::string error;
    if (!gpuslack::bench::read_trace(in, &t, &error)) die(file + ": " + error);
    Result r = replay(t, reserve, cache_limit, map_chunk, verbose);
    print_row(t, r, tsv);
    std::fflush(stdout);
  }
  return 0;
}
