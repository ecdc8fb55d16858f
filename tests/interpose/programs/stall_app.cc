// An application that stalls in known ways, for the end-to-end tests of the
// ledger and the summary (summary_test.py). Linked against the simulated
// runtime; its busy kernel stands in for a long GPU kernel.
//
// Usage: stall_app MODE [EXIT_CODE]
//   free      a cudaFree while a 50 ms kernel runs on another stream
//   pageable  a pageable cudaMemcpyAsync behind a 50 ms kernel on its stream
//   sync      a cudaStreamSynchronize on a 50 ms kernel ("waiting for the GPU")
//   threads   8 threads making hooked calls at once
//   sleep     one CUDA call, then sleeps 1.5 s (for signals and periodic summaries)
//   fork      CUDA calls, then fork(): the child exits normally (running the
//             atexit handlers it inherited), the parent waits for it
//   handler   like sleep, with its own SIGTERM handler (installed before the
//             first CUDA call, as Python installs its SIGINT handler) that
//             exits with 7
// Exits with EXIT_CODE (default 0) after the work, or 1 on a CUDA error.
// STALL_KERNEL_MS (environment, 1 to 60000) sets the kernels' length, for a
// test that needs a wider margin between "waited for it" and "did not".
#include <cuda_runtime_api.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "gpusim.h"

#define CHECK(x)                                                        \
  do {                                                                  \
    cudaError_t e_ = (x);                                               \
    if (e_ != cudaSuccess) {                                            \
      std::fprintf(stderr, "stall_app: %s: %s\n", #x, cudaGetErrorName(e_)); \
      std::exit(1);                                                     \
    }                                                                   \
  } while (0)

namespace {

const unsigned kKernelUs = [] {
  const char* ms = std::getenv("STALL_KERNEL_MS");
  char* end = nullptr;
  unsigned long v = ms ? std::strtoul(ms, &end, 10) : 0;
  return v > 0 && v <= 60000 && end && *end == '\0' ? static_cast<unsigned>(v) * 1000u : 50000u;
}();

void free_behind_kernel() {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void *busy, *other;
  CHECK(cudaMalloc(&busy, 4096));
  CHECK(cudaMalloc(&other, 4096));
  CHECK(gpusim_busy_kernel(s, busy, 4096, kKernelUs, 1, nullptr));
  CHECK(cudaFree(other));  // waits for the kernel: >= 50 ms of allocation stall
  CHECK(cudaFree(busy));
  CHECK(cudaStreamDestroy(s));
}

void pageable_behind_kernel() {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  void *busy, *dst;
  CHECK(cudaMalloc(&busy, 4096));
  CHECK(cudaMalloc(&dst, 1 << 20));
  std::vector<char> pageable(1 << 20, 1);
  CHECK(gpusim_busy_kernel(s, busy, 4096, kKernelUs, 1, nullptr));
  // The driver drains the stream first: >= 50 ms of copy stall.
  CHECK(cudaMemcpyAsync(dst, pageable.data(), pageable.size(), cudaMemcpyHostToDevice, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFree(dst));
  CHECK(cudaFree(busy));
}

void sync_on_kernel() {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  void* busy;
  CHECK(cudaMalloc(&busy, 4096));
  CHECK(gpusim_busy_kernel(s, busy, 4096, kKernelUs, 1, nullptr));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFree(busy));
}

void threads() {
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([] {
      void* d;
      CHECK(cudaMalloc(&d, 1 << 16));
      std::vector<char> h(1 << 16);
      for (int i = 0; i < 200; ++i) {
        size_t free_b, total;
        CHECK(cudaMemGetInfo(&free_b, &total));
        CHECK(cudaMemsetAsync(d, i, 1 << 16, cudaStreamPerThread));
        CHECK(cudaMemcpy(h.data(), d, 1 << 16, cudaMemcpyDeviceToHost));
      }
      CHECK(cudaFree(d));
    });
  for (auto& t : ts) t.join();
}

void on_term(int) { _exit(7); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 64;
  const char* mode = argv[1];
  int code = argc > 2 ? std::atoi(argv[2]) : 0;
  if (!std::strcmp(mode, "free")) free_behind_kernel();
  else if (!std::strcmp(mode, "pageable")) pageable_behind_kernel();
  else if (!std::strcmp(mode, "sync")) sync_on_kernel();
  else if (!std::strcmp(mode, "threads")) threads();
  else if (!std::strcmp(mode, "fork")) {
    sync_on_kernel();
    pid_t child = fork();
    if (child == 0) std::exit(0);  // atexit handlers run here too
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 2;
  }
  else if (!std::strcmp(mode, "sleep") || !std::strcmp(mode, "handler")) {
    if (!std::strcmp(mode, "handler")) signal(SIGTERM, on_term);
    void* d;
    CHECK(cudaMalloc(&d, 4096));
    std::printf("ready\n");
    std::fflush(stdout);
    usleep(1500000);
    CHECK(cudaFree(d));
  } else {
    return 64;
  }
  return code;
}
