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
// Prints what it measured itself, on one line, for the test to compare:
//   timeline_app: cpu_s X alloc_s Y kernels N
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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

int main(int argc, char** argv) {
  int steps = 20, kernels = 10;
  double cpu_ms = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--steps") steps = std::atoi(argv[i + 1]);
    else if (k == "--kernels") kernels = std::atoi(argv[i + 1]);
    else if (k == "--cpu-ms") cpu_ms = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: timeline_app [--steps N] [--kernels K] [--cpu-ms MS]\n");
      return 2;
    }
  }
  using StepFn = void (*)();
  auto step_mark = reinterpret_cast<StepFn>(dlsym(RTLD_DEFAULT, "gpuslack_step"));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  double cpu_s = 0, alloc_s = 0;
  long launched = 0;
  for (int step = 0; step < steps; ++step) {
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
  CHECK_CUDA(cudaStreamDestroy(s));
  std::printf("timeline_app: cpu_s %.6f alloc_s %.6f kernels %ld\n", cpu_s, alloc_s, launched);
  return 0;
}
