// A training loop with known GPU and host times, for the GPU timeline's
// end-to-end test (tests/interpose/timeline_test.py). Each step:
//   1. launches --kernels kernels on one stream (each occupies the
//      simulated GPU for the cost model's kernel time, GPUSIM_COST_KERNEL_US)
//      and waits for them (cudaStreamSynchronize);
//   2. works on the host for --cpu-ms with no CUDA call in flight (the GPU
//      idles, host-bound);
//   3. allocates and frees a buffer (cudaMalloc, cudaFree: with the GPU idle,
//      every microsecond of them is GPU idle charged to allocation);
//   4. marks the step (gpuslack_step, when gpuslack is preloaded).
// Before the loop, under gpuslack, it waits (at most 10 s) until the live
// summary says whether the timeline measures: the timeline starts on a
// thread of its own, and GPU work before it is not seen.
// With --tool MODE (legacy, shared, exclusive, handle: gpusim_cupti_tool.h) it also
// runs the simulated second CUPTI tool (the library GPUSIM_CUPTI_TOOL
// names), started before its first CUDA call (--tool-when before) or after
// half of the steps (after), and prints what the tool received.
// With --threads N (N > 1) the loop's launches come from N threads at once,
// each with its own stream, and there is no CPU work or allocation: the
// GPU timeline must get every kernel while CUPTI holds a buffer per
// launching thread (Note [Buffers per launching thread]).
// Prints what it measured itself, on one line, for the test to compare:
//   timeline_app: cpu_s X alloc_s Y loop_s Z kernels N [tool_rc R tool_records K]
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

#define CHECK_CUDA(x)                                                                   \
  do {                                                                                  \
    cudaError_t e_ = (x);                                                               \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "timeline_app: %s failed: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

// The simulated device runs no kernel body: any host function stands for one.
void fake_kernel() {}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

volatile unsigned g_sink;

void cpu_work(double ms) {
  const auto end = Clock::now() + std::chrono::duration<double, std::milli>(ms);
  unsigned x = 1;
  while (Clock::now() < end)
    for (int i = 0; i < 1000; ++i) x = x * 1664525u + 1013904223u;
  g_sink = x;
}

}  // namespace

// The simulated second tool, by dlopen: the program runs without it too.
struct Tool {
  int (*start)(int, const char*) = nullptr;
  int (*stop)() = nullptr;
  long (*records)() = nullptr;
  int rc = -1;

  bool load() {
    const char* path = std::getenv("GPUSIM_CUPTI_TOOL");
    void* h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!h) return false;
    start = reinterpret_cast<int (*)(int, const char*)>(dlsym(h, "gpusim_cupti_tool_start"));
    stop = reinterpret_cast<int (*)()>(dlsym(h, "gpusim_cupti_tool_stop"));
    records = reinterpret_cast<long (*)()>(dlsym(h, "gpusim_cupti_tool_records"));
    return start && stop && records;
  }
};

int tool_mode(const std::string& name) {
  if (name == "legacy") return 1;
  if (name == "shared") return 2;
  if (name == "exclusive") return 3;
  if (name == "handle") return 4;
  return 0;
}

int main(int argc, char** argv) {
  int steps = 20, kernels = 10;
  double cpu_ms = 20;
  int mode = 0;
  int threads = 1;
  bool tool_before = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--steps") steps = std::atoi(argv[i + 1]);
    else if (k == "--kernels") kernels = std::atoi(argv[i + 1]);
    else if (k == "--cpu-ms") cpu_ms = std::atof(argv[i + 1]);
    else if (k == "--tool") mode = tool_mode(argv[i + 1]);
    else if (k == "--threads") threads = std::atoi(argv[i + 1]);
    else if (k == "--tool-when") tool_before = std::string(argv[i + 1]) == "before";
    else {
      std::fprintf(stderr, "usage: timeline_app [--steps N] [--kernels K] [--cpu-ms MS] [--tool MODE] "
                           "[--tool-when before|after]\n");
      return 2;
    }
  }
  Tool tool;
  if (mode != 0 && !tool.load()) {
    std::fprintf(stderr, "timeline_app: --tool needs GPUSIM_CUPTI_TOOL naming libgpusim_cupti_tool.so\n");
    return 2;
  }
  if (mode != 0 && tool_before) tool.rc = tool.start(mode, "second tool");
  using StepFn = void (*)();
  auto step_mark = reinterpret_cast<StepFn>(dlsym(RTLD_DEFAULT, "gpuslack_step"));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  using SummaryFn = char* (*)();
  using FreeFn = void (*)(void*);
  auto summary = reinterpret_cast<SummaryFn>(dlsym(RTLD_DEFAULT, "gpuslack_summary_json"));
  auto summary_free = reinterpret_cast<FreeFn>(dlsym(RTLD_DEFAULT, "gpuslack_free"));
  for (auto t = Clock::now(); summary && summary_free && seconds_since(t) < 10;) {
    char* json = summary();
    // The section appears once the timeline decided: measured, or not.
    const bool decided = json && std::strstr(json, "\"gpu_timeline\"");
    summary_free(json);
    if (decided) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto loop_start = Clock::now();
  double cpu_s = 0, alloc_s = 0;
  long launched = 0;
  if (threads > 1) {
    std::atomic<long> total{0};
    std::vector<std::thread> launchers;
    for (int t = 0; t < threads; ++t)
      launchers.emplace_back([&] {
        cudaStream_t own;
        if (cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking) != cudaSuccess) return;
        for (int step = 0; step < steps; ++step) {
          for (int k = 0; k < kernels; ++k)
            if (cudaLaunchKernel(reinterpret_cast<const void*>(&fake_kernel), dim3(1), dim3(1), nullptr, 0, own) ==
                cudaSuccess)
              total.fetch_add(1);
          cudaStreamSynchronize(own);
        }
        cudaStreamDestroy(own);
      });
    for (std::thread& t : launchers) t.join();
    launched = total.load();
    steps = 0;  // the single-thread loop below does nothing
  }
  for (int step = 0; step < steps; ++step) {
    if (mode != 0 && !tool_before && step == steps / 2) tool.rc = tool.start(mode, "second tool");
    for (int k = 0; k < kernels; ++k) {
      CHECK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(&fake_kernel), dim3(1), dim3(1), nullptr, 0, s));
      ++launched;
    }
    CHECK_CUDA(cudaStreamSynchronize(s));
    auto t = Clock::now();
    cpu_work(cpu_ms);
    cpu_s += seconds_since(t);
    t = Clock::now();
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, 1 << 20));
    CHECK_CUDA(cudaFree(p));
    alloc_s += seconds_since(t);
    if (step_mark) step_mark();
  }
  const double loop_s = seconds_since(loop_start);
  CHECK_CUDA(cudaStreamDestroy(s));
  std::printf("timeline_app: cpu_s %.6f alloc_s %.6f loop_s %.6f kernels %ld", cpu_s, alloc_s, loop_s, launched);
  if (mode != 0) {
    long got = tool.rc == 0 ? (tool.stop(), tool.records()) : 0;
    std::printf(" tool_rc %d tool_records %ld", tool.rc, got);
  }
  std::printf("\n");
  return 0;
}
