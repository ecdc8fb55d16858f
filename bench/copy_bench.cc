// Copy bandwidth: pinned, pageable, and pageable through gpuslack's staging,
// host->device and device->host, 4 KiB to 256 MiB, side by side in one
// process (bench/README.md, "Staged copies").
//
// Each cell times the copy call (the host time blocked in it: what the
// application feels) and the copy until its data has landed (the call and a
// cudaStreamSynchronize: bandwidth = bytes / that time). The ways of one
// size are interleaved, repetition by repetition, and the medians taken:
// the machine is noisy. "gpuslack" is the core's stage::Stager, what the
// hooks of libgpuslack.so call (the hook itself adds ~20 ns:
// hook_overhead_bench); its D2H way is chosen by measuring, as in the
// product; "staged" forces the staged way.
//
// Modes (one per run; all by default):
//   --bandwidth  the table above, on an idle stream
//   --busy       H2D host time blocked when a 2 ms kernel is queued ahead
//   --small      1 B..64 KiB: host time per call, idle stream (the threshold)
//   --chunks     64 MiB staged with chunks of 64 KiB..8 MiB (staging_chunk_kb)
//   --threads    64 MiB staged with 1, 2, 4 host copy threads (staging_copy_threads)
//   --overlap    copy and compute on two streams: how much of the copy is hidden
// --max-mib N caps the sizes (default 256).
//
// Run: build/bench/copy_bench (links the simulated libcudart; on a GPU host
// put the real libcudart.so.13 first in LD_LIBRARY_PATH: the busy kernel
// then becomes device-to-device copies of the same duration, measured).
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stage/staged_copy.h"

namespace {

using gpuslack::stage::CopyCall;
using gpuslack::stage::Stager;
using gpuslack::stage::StagerConfig;
using Clock = std::chrono::steady_clock;

constexpr size_t kKiB = 1024, kMiB = 1024 * 1024;

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "copy_bench: %s failed: %s\n", #x, cudaGetErrorString(e_));    \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string size_text(size_t n) {
  char buf[32];
  if (n >= kMiB) std::snprintf(buf, sizeof(buf), "%zu MiB", n / kMiB);
  else if (n >= kKiB) std::snprintf(buf, sizeof(buf), "%zu KiB", n / kKiB);
  else std::snprintf(buf, sizeof(buf), "%zu B", n);
  return buf;
}

std::string us_text(double s) {
  char buf[32];
  if (s >= 1e-2) std::snprintf(buf, sizeof(buf), "%.1f ms", s * 1e3);
  else std::snprintf(buf, sizeof(buf), "%.1f us", s * 1e6);
  return buf;
}

cudaError_t native(const CopyCall& c, void*) { return cudaMemcpyAsync(c.dst, c.src, c.width, c.kind, c.stream); }

CopyCall call(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  return CopyCall::linear(dst, src, n, kind, s);
}

StagerConfig config(size_t chunk = kMiB, int threads = 1,
                    StagerConfig::D2hWay way = StagerConfig::D2hWay::kMeasure) {
  StagerConfig c;
  c.enabled = true;
  c.budget_bytes = 256 * kMiB;
  c.chunk_bytes = chunk;
  c.threshold_bytes = 0;
  c.copy_threads = threads;
  c.d2h_way = way;
  return c;
}

// GPU work of `us` microseconds on `s`: the simulated device's busy
// kernel, or else device-to-device copies sized to take that long.
struct Compute {
  using BusyFn = cudaError_t (*)(cudaStream_t, void*, size_t, unsigned, uint32_t, volatile int*);
  BusyFn busy = reinterpret_cast<BusyFn>(dlsym(RTLD_DEFAULT, "gpusim_busy_kernel"));
  void* buf = nullptr;
  size_t d2d_bytes_per_us = 0;
  Compute() {
    CHECK(cudaMalloc(&buf, busy ? 4096 : 512 * kMiB));
    if (!busy) {  // measure the device-to-device rate once
      cudaStream_t s;
      CHECK(cudaStreamCreate(&s));
      auto t = Clock::now();
      for (int i = 0; i < 20; ++i) CHECK(cudaMemcpyAsync(buf, static_cast<char*>(buf) + 256 * kMiB, 256 * kMiB,
                                                         cudaMemcpyDeviceToDevice, s));
      CHECK(cudaStreamSynchronize(s));
      d2d_bytes_per_us = static_cast<size_t>(20 * 256 * kMiB / (seconds_since(t) * 1e6));
      cudaStreamDestroy(s);
    }
  }
  void run(cudaStream_t s, unsigned us) {
    if (busy) {
      CHECK(busy(s, buf, 4096, us, 1, nullptr));
      return;
    }
    size_t left = d2d_bytes_per_us * us;
    while (left > 0) {
      size_t n = std::min(left, 256 * kMiB);
      CHECK(cudaMemcpyAsync(buf, static_cast<char*>(buf) + 256 * kMiB, n, cudaMemcpyDeviceToDevice, s));
      left -= n;
    }
  }
};

struct Buffers {
  char* pageable;
  char* pageable_back;
  void* pinned;
  void* device;
  explicit Buffers(size_t max) {
    pageable = static_cast<char*>(std::malloc(max));
    pageable_back = static_cast<char*>(std::malloc(max));
    std::memset(pageable, 1, max);
    std::memset(pageable_back, 2, max);
    CHECK(cudaMallocHost(&pinned, max));
    CHECK(cudaMalloc(&device, max));
  }
};

// One way of copying: a copy call on `s` (returns when the call returns).
using Way = std::function<void(size_t n, cudaStream_t s)>;

struct Timing {
  std::vector<double> call, total;
};

void time_ways(std::vector<Way>& ways, std::vector<Timing>& out, size_t n, cudaStream_t s, int reps,
               const std::function<void()>& before = nullptr) {
  out.assign(ways.size(), {});
  for (Way& w : ways) {  // untimed: staging memory is pinned on first use
    w(n, s);
    CHECK(cudaStreamSynchronize(s));
  }
  for (int r = 0; r < reps; ++r) {
    for (size_t w = 0; w < ways.size(); ++w) {
      if (before) before();
      auto t = Clock::now();
      ways[w](n, s);
      out[w].call.push_back(seconds_since(t));
      CHECK(cudaStreamSynchronize(s));
      out[w].total.push_back(seconds_since(t));
    }
  }
}

int reps_for(size_t n) { return static_cast<int>(std::clamp<size_t>(256 * kMiB / n, 5, 200)); }

void bandwidth(Buffers& b, size_t max, cudaStream_t s) {
  Stager gs(config());
  Stager staged(config(kMiB, 1, StagerConfig::D2hWay::kStaged));
  std::vector<Way> h2d = {
      [&](size_t n, cudaStream_t st) { CHECK(cudaMemcpyAsync(b.device, b.pinned, n, cudaMemcpyHostToDevice, st)); },
      [&](size_t n, cudaStream_t st) { CHECK(cudaMemcpyAsync(b.device, b.pageable, n, cudaMemcpyHostToDevice, st)); },
      [&](size_t n, cudaStream_t st) {
        CHECK(gs.copy(call(b.device, b.pageable, n, cudaMemcpyHostToDevice, st), &native, nullptr));
      },
  };
  std::vector<Way> d2h = {
      [&](size_t n, cudaStream_t st) { CHECK(cudaMemcpyAsync(b.pinned, b.device, n, cudaMemcpyDeviceToHost, st)); },
      [&](size_t n, cudaStream_t st) {
        CHECK(cudaMemcpyAsync(b.pageable_back, b.device, n, cudaMemcpyDeviceToHost, st));
      },
      [&](size_t n, cudaStream_t st) {
        CHECK(staged.copy(call(b.pageable_back, b.device, n, cudaMemcpyDeviceToHost, st), &native, nullptr));
      },
      [&](size_t n, cudaStream_t st) {
        CHECK(gs.copy(call(b.pageable_back, b.device, n, cudaMemcpyDeviceToHost, st), &native, nullptr));
      },
  };
  std::printf("\n## Bandwidth, idle stream (GB/s until landed; host time blocked in the call)\n\n");
  std::printf("| size | H2D pinned | H2D pageable | H2D gpuslack | call: pageable | call: gpuslack "
              "| D2H pinned | D2H pageable | D2H staged | D2H gpuslack |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (size_t n = 4 * kKiB; n <= max; n *= 4) {
    std::vector<Timing> th, td;
    time_ways(h2d, th, n, s, reps_for(n));
    time_ways(d2h, td, n, s, reps_for(n));
    auto gbps = [n](const Timing& t) { return n / median(t.total) / 1e9; };
    std::printf("| %s | %.2f | %.2f | %.2f | %s | %s | %.2f | %.2f | %.2f | %.2f |\n", size_text(n).c_str(),
                gbps(th[0]), gbps(th[1]), gbps(th[2]), us_text(median(th[1].call)).c_str(),
                us_text(median(th[2].call)).c_str(), gbps(td[0]), gbps(td[1]), gbps(td[2]), gbps(td[3]));
    std::fflush(stdout);
  }
  auto st = gs.stats();
  std::printf("\ngpuslack's D2H: %llu staged, %llu left to the runtime (measured faster, or measuring)\n",
              static_cast<unsigned long long>(st.d2h.staged), static_cast<unsigned long long>(st.passed_measured));
}

void busy(Buffers& b, size_t max, cudaStream_t s) {
  Compute compute;
  Stager gs(config());
  std::vector<Way> h2d = {
      [&](size_t n, cudaStream_t st) { CHECK(cudaMemcpyAsync(b.device, b.pageable, n, cudaMemcpyHostToDevice, st)); },
      [&](size_t n, cudaStream_t st) {
        CHECK(gs.copy(call(b.device, b.pageable, n, cudaMemcpyHostToDevice, st), &native, nullptr));
      },
  };
  std::printf("\n## H2D behind a 2 ms kernel on the same stream (host time blocked in the call)\n\n");
  std::printf("| size | pageable | gpuslack |\n|---|---|---|\n");
  for (size_t n = 4 * kKiB; n <= std::min(max, 64 * kMiB); n *= 4) {
    std::vector<Timing> t;
    time_ways(h2d, t, n, s, 5, [&] { compute.run(s, 2000); });
    std::printf("| %s | %s | %s |\n", size_text(n).c_str(), us_text(median(t[0].call)).c_str(),
                us_text(median(t[1].call)).c_str());
    std::fflush(stdout);
  }
}

void small(Buffers& b, cudaStream_t s) {
  Stager gs(config());
  std::vector<Way> h2d = {
      [&](size_t n, cudaStream_t st) { CHECK(cudaMemcpyAsync(b.device, b.pageable, n, cudaMemcpyHostToDevice, st)); },
      [&](size_t n, cudaStream_t st) {
        CHECK(gs.copy(call(b.device, b.pageable, n, cudaMemcpyHostToDevice, st), &native, nullptr));
      },
  };
  std::printf("\n## Small H2D copies, idle stream (host time blocked in the call, median of 200)\n\n");
  std::printf("| size | pageable | gpuslack |\n|---|---|---|\n");
  for (size_t n = 1; n <= 64 * kKiB; n *= 4) {
    std::vector<Timing> t;
    time_ways(h2d, t, n, s, 200);
    std::printf("| %s | %s | %s |\n", size_text(n).c_str(), us_text(median(t[0].call)).c_str(),
                us_text(median(t[1].call)).c_str());
    std::fflush(stdout);
  }
}

void sweep(Buffers& b, cudaStream_t s, bool threads) {
  const size_t n = 64 * kMiB;
  std::printf("\n## 64 MiB staged, by %s (GB/s until landed; host time blocked)\n\n",
              threads ? "host copy threads (1 MiB chunks)" : "chunk size (1 thread)");
  std::printf("| %s | H2D GB/s | H2D call | D2H GB/s |\n|---|---|---|---|\n", threads ? "threads" : "chunk");
  std::vector<size_t> values = threads ? std::vector<size_t>{1, 2, 4}
                                       : std::vector<size_t>{64 * kKiB, 256 * kKiB, kMiB, 2 * kMiB, 4 * kMiB, 8 * kMiB};
  std::vector<std::unique_ptr<Stager>> stagers;
  for (size_t v : values)
    stagers.push_back(std::make_unique<Stager>(threads ? config(kMiB, static_cast<int>(v), StagerConfig::D2hWay::kStaged)
                                                       : config(v, 1, StagerConfig::D2hWay::kStaged)));
  std::vector<Way> ways;
  for (auto& st : stagers) {
    Stager* p = st.get();
    ways.push_back([&b, p](size_t m, cudaStream_t str) {
      CHECK(p->copy(call(b.device, b.pageable, m, cudaMemcpyHostToDevice, str), &native, nullptr));
    });
    ways.push_back([&b, p](size_t m, cudaStream_t str) {
      CHECK(p->copy(call(b.pageable_back, b.device, m, cudaMemcpyDeviceToHost, str), &native, nullptr));
    });
  }
  std::vector<Timing> t;
  time_ways(ways, t, n, s, 7);
  for (size_t i = 0; i < values.size(); ++i) {
    std::string label = threads ? std::to_string(values[i]) : size_text(values[i]);
    std::printf("| %s | %.2f | %s | %.2f |\n", label.c_str(), n / median(t[2 * i].total) / 1e9,
                us_text(median(t[2 * i].call)).c_str(), n / median(t[2 * i + 1].total) / 1e9);
  }
}

// Copy and compute on two streams, as an input pipeline does: each step
// copies its batch (pageable, 32 MiB) into an input buffer on the copy
// stream, once the compute that last read that buffer has finished, and
// the compute stream waits for the copy (4 ms of compute per step). With
// two input buffers the copy of step i+1 may run during the compute of
// step i; with one, a copy can only follow the previous compute. The
// driver's drain of the copy stream waits for that compute before the host
// even starts copying; staged, the host copies at once and only the DMA
// waits. "Copy hidden" = (compute + copy alone - step) / copy alone, each
// way against its own copy-alone time.
void overlap(Buffers& b, cudaStream_t) {
  Compute compute;
  const size_t n = 32 * kMiB;
  const unsigned compute_us = 4000;
  const int steps = 16;
  cudaStream_t copy_s, compute_s;
  CHECK(cudaStreamCreateWithFlags(&copy_s, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&compute_s, cudaStreamNonBlocking));
  cudaEvent_t copied, consumed[2];
  CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
  for (cudaEvent_t& e : consumed) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  Stager gs(config());
  using Copy = std::function<void(void* dst)>;
  auto run = [&](const Copy& copy, int buffers) {
    auto t = Clock::now();
    for (int i = 0; i < steps; ++i) {
      int k = i % buffers;
      CHECK(cudaStreamWaitEvent(copy_s, consumed[k], 0));
      copy(static_cast<char*>(b.device) + k * n);
      CHECK(cudaEventRecord(copied, copy_s));
      CHECK(cudaStreamWaitEvent(compute_s, copied, 0));
      compute.run(compute_s, compute_us);
      CHECK(cudaEventRecord(consumed[k], compute_s));
    }
    CHECK(cudaDeviceSynchronize());
    return seconds_since(t) / steps;
  };
  auto copy_alone = [&](const Copy& copy) {
    std::vector<double> v;
    for (int i = 0; i < 5; ++i) {
      auto t = Clock::now();
      copy(b.device);
      CHECK(cudaStreamSynchronize(copy_s));
      v.push_back(seconds_since(t));
    }
    return median(v);
  };
  Copy ways[] = {
      [&](void* d) { CHECK(cudaMemcpyAsync(d, b.pinned, n, cudaMemcpyHostToDevice, copy_s)); },
      [&](void* d) { CHECK(cudaMemcpyAsync(d, b.pageable, n, cudaMemcpyHostToDevice, copy_s)); },
      [&](void* d) { CHECK(gs.copy(call(d, b.pageable, n, cudaMemcpyHostToDevice, copy_s), &native, nullptr)); },
  };
  const char* names[] = {"pinned", "pageable", "pageable through gpuslack"};
  std::printf("\n## Overlap: 32 MiB H2D per step on a copy stream, 4 ms of compute per step on another "
              "(%d steps; medians of 3 runs)\n\n", steps);
  std::printf("| input buffers | copy | copy alone | step | copy hidden |\n|---|---|---|---|---|\n");
  for (const Copy& w : ways) run(w, 2);  // untimed: touches both buffers, pins staging memory
  for (int buffers : {2, 1}) {
    for (int w = 0; w < 3; ++w) {
      std::vector<double> alone, step;
      for (int rep = 0; rep < 3; ++rep) {
        alone.push_back(copy_alone(ways[w]));
        step.push_back(run(ways[w], buffers));
      }
      double a = median(alone), st = median(step);
      double hidden = a > 0 ? std::clamp((compute_us * 1e-6 + a - st) / a, 0.0, 1.0) : 0;
      std::printf("| %d | %s | %s | %s | %.0f%% |\n", buffers, names[w], us_text(a).c_str(), us_text(st).c_str(),
                  hidden * 100);
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t max = 256 * kMiB;
  std::vector<std::string> modes;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--max-mib" && i + 1 < argc) max = static_cast<size_t>(std::atol(argv[++i])) * kMiB;
    else if (a.rfind("--", 0) == 0) modes.push_back(a.substr(2));
  }
  if (modes.empty()) modes = {"bandwidth", "busy", "small", "chunks", "threads", "overlap"};
  max = std::max(max, 64 * kMiB);
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("copy_bench: device 0: %s\n", prop.name);
  Buffers b(max);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (const std::string& m : modes) {
    if (m == "bandwidth") bandwidth(b, max, s);
    else if (m == "busy") busy(b, max, s);
    else if (m == "small") small(b, s);
    else if (m == "chunks") sweep(b, s, false);
    else if (m == "threads") sweep(b, s, true);
    else if (m == "overlap") overlap(b, s);
    else {
      std::fprintf(stderr, "copy_bench: unknown mode --%s\n", m.c_str());
      return 2;
    }
  }
  return 0;
}
