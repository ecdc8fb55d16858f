// An application that stalls in known ways, for the end-to-end tests of the
// ledger and the summary (summary_test.py). Linked against the simulated
// runtime; its busy kernel stands in for a long GPU kernel.
//
// Usage: stall_app MODE [EXIT_CODE]
//   free      a cudaFree while a 50 ms kernel runs on another stream
//   pageable  a pageable cudaMemcpyAsync behind a 50 ms kernel on its stream
//   sync      a cudaStreamSynchronize on a 50 ms kernel ("waiting for the GPU")
//   pageable-ledger  pageable copies of 1 MiB: a cudaMemcpy to the device and
//             one back, then a cudaMemcpy of 2 MiB into the 1 MiB allocation,
//             which must be refused (exits 1 if it is not)
//   threads   8 threads making hooked calls at once
//   parallel  8 threads, each a cudaFree behind a 50 ms kernel of its own:
//             ~8 times the wall time blocked, summed over threads
//   sleep     one CUDA call, then sleeps 1.5 s (for signals and periodic summaries)
//   fork      CUDA calls, then fork(): the child exits normally (running the
//             atexit handlers it inherited), the parent waits for it
//   handler   like sleep, with its own SIGTERM handler (installed before the
//             first CUDA call, as Python installs its SIGINT handler) that
//             exits with 7
//   dfl-siginfo  like sleep, with SIGTERM set back to its default action by
//             sigaction with SA_SIGINFO and a null sa_sigaction (what a
//             program that saved and restores a SA_SIGINFO action may set)
//   forkload N  4 threads make CUDA calls and a fifth reads the summary
//             (gpuslack_summary_json, when preloaded) while the main thread
//             forks N times; each child exits at once. A child still running
//             20 s after its fork is hung: killed, and no more forks. Prints
//             "forks N hung H"; exits 2 if one hung
//   churn N   N short-lived threads, 8 at a time, each making a few CUDA
//             calls; prints "rss_kib K" (VmRSS) after a tenth of them and
//             again at the end
//   sigread   a SIGINT handler installed as CPython installs its own (before
//             the first CUDA call, no SA_RESTART, SIGUSR1 in its mask);
//             prints the flags and mask sigaction reads back after a CUDA
//             call, then "ready", then blocks in read(0): prints
//             "read: EINTR" when a signal interrupts it (exit 0), else exits 3
//   sigign    one CUDA call, then prints "SigIgn: <hex>" of /proc/self/status,
//             raises SIGTERM and SIGINT (ignored: nothing happens), and
//             execs itself as "sigign-exec", which prints its own SigIgn
//   late      one CUDA call, then installs its own SIGTERM handler (no
//             SA_RESTART), which prints "late handler" and chains to the one
//             it replaced, as a careful program does (SIG_DFL: default
//             action); prints "ready" and sleeps 1.5 s
// Exits with EXIT_CODE (default 0) after the work, or 1 on a CUDA error.
// STALL_KERNEL_MS (environment, 1 to 60000) sets the kernels' length, for a
// test that needs a wider margin between "waited for it" and "did not".
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
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

void pageable_ledger() {
  constexpr size_t kMiB = 1 << 20;
  void* dev = nullptr;
  CHECK(cudaMalloc(&dev, kMiB));
  std::vector<char> host(2 * kMiB, 1);
  CHECK(cudaMemcpy(dev, host.data(), kMiB, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(host.data(), dev, kMiB, cudaMemcpyDeviceToHost));
  if (cudaMemcpy(dev, host.data(), 2 * kMiB, cudaMemcpyHostToDevice) == cudaSuccess) {
    std::fprintf(stderr, "stall_app: a copy past the end of its allocation succeeded\n");
    std::exit(1);
  }
  cudaGetLastError();
  CHECK(cudaFree(dev));
}

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

void parallel_frees() {
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([] {
      cudaStream_t s;
      CHECK(cudaStreamCreate(&s));
      void *busy, *other;
      CHECK(cudaMalloc(&busy, 4096));
      CHECK(cudaMalloc(&other, 4096));
      CHECK(gpusim_busy_kernel(s, busy, 4096, kKernelUs, 1, nullptr));
      CHECK(cudaFree(other));  // waits for the kernels
      CHECK(cudaFree(busy));
      CHECK(cudaStreamDestroy(s));
    });
  for (auto& t : ts) t.join();
}

void on_term(int) { _exit(7); }

// A field of /proc/self/status ("SigIgn", "VmRSS"), as written there.
std::string status_field(const char* name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  std::string prefix = std::string(name) + ":";
  while (std::getline(in, line))
    if (line.compare(0, prefix.size(), prefix) == 0) {
      size_t at = line.find_first_not_of(" \t", prefix.size());
      return at == std::string::npos ? std::string() : line.substr(at);
    }
  return "?";
}

void some_cuda_calls(size_t bytes) {
  void* d;
  CHECK(cudaMalloc(&d, bytes));
  std::vector<char> h(bytes);
  CHECK(cudaMemset(d, 1, bytes));
  CHECK(cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
}

int fork_under_load(int forks) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      while (!stop.load()) {
        size_t free_b, total;
        CHECK(cudaMemGetInfo(&free_b, &total));
        some_cuda_calls(4096);
      }
    });
  // The summary, read over and over, takes every lock of gpuslack's ledger.
  using SummaryFn = char* (*)();
  using FreeFn = void (*)(void*);
  auto summary = reinterpret_cast<SummaryFn>(dlsym(RTLD_DEFAULT, "gpuslack_summary_json"));
  auto release = reinterpret_cast<FreeFn>(dlsym(RTLD_DEFAULT, "gpuslack_free"));
  std::thread reader([&] {
    while (!stop.load() && summary && release) release(summary());
  });
  int hung = 0, forked = 0;
  for (int i = 0; i < forks && hung == 0; ++i, ++forked) {
    pid_t child = fork();
    if (child == 0) _exit(0);
    if (child < 0) {
      std::perror("fork");
      break;
    }
    int status = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (waitpid(child, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        ++hung;
        break;
      }
      poll(nullptr, 0, 1);
    }
  }
  stop = true;
  for (auto& t : callers) t.join();
  reader.join();
  std::printf("forks %d hung %d\n", forked, hung);
  return hung ? 2 : 0;
}

void churn(int threads) {
  for (int done = 0; done < threads;) {
    std::vector<std::thread> batch;
    for (int k = 0; k < 8 && done < threads; ++k, ++done) batch.emplace_back([] { some_cuda_calls(4096); });
    for (auto& t : batch) t.join();
    if (done == threads / 10 || done == threads) {
      std::printf("rss_kib %ld\n", std::strtol(status_field("VmRSS").c_str(), nullptr, 10));
      std::fflush(stdout);
    }
  }
}

std::atomic<int> g_interrupted{0};
void on_int(int) { g_interrupted = 1; }

int blocked_read() {
  struct sigaction a;
  std::memset(&a, 0, sizeof(a));
  a.sa_handler = on_int;
  a.sa_flags = 0;  // no SA_RESTART: CPython's
  sigemptyset(&a.sa_mask);
  sigaddset(&a.sa_mask, SIGUSR1);
  sigaction(SIGINT, &a, nullptr);
  void* d;
  CHECK(cudaMalloc(&d, 4096));
  struct sigaction now;
  sigaction(SIGINT, nullptr, &now);
  std::printf("flags 0x%x usr1 in mask %d\n",
              static_cast<unsigned>(now.sa_flags) & (SA_RESTART | SA_SIGINFO | SA_NODEFER | SA_RESETHAND | SA_ONSTACK),
              sigismember(&now.sa_mask, SIGUSR1));
  std::printf("ready\n");
  std::fflush(stdout);
  char c;
  ssize_t n = read(0, &c, 1);
  if (n < 0 && errno == EINTR && g_interrupted) {
    std::printf("read: EINTR\n");
    std::fflush(stdout);
    CHECK(cudaFree(d));
    return 0;
  }
  return 3;
}

int ignored_signals() {
  void* d;
  CHECK(cudaMalloc(&d, 4096));
  std::printf("SigIgn: %s\n", status_field("SigIgn").c_str());
  std::fflush(stdout);
  raise(SIGTERM);
  raise(SIGINT);
  CHECK(cudaFree(d));
  execl("/proc/self/exe", "stall_app", "sigign-exec", static_cast<char*>(nullptr));
  return 4;
}

struct sigaction g_replaced;
void on_late_term(int sig, siginfo_t* info, void* context) {
  static const char kLine[] = "late handler\n";
  if (write(1, kLine, sizeof(kLine) - 1) < 0) _exit(5);
  if (g_replaced.sa_flags & SA_SIGINFO) {
    g_replaced.sa_sigaction(sig, info, context);
  } else if (g_replaced.sa_handler == SIG_DFL) {
    signal(sig, SIG_DFL);
    raise(sig);
  } else if (g_replaced.sa_handler != SIG_IGN) {
    g_replaced.sa_handler(sig);
  }
}

void late_handler() {
  void* d;
  CHECK(cudaMalloc(&d, 4096));
  struct sigaction a;
  std::memset(&a, 0, sizeof(a));
  a.sa_sigaction = on_late_term;
  a.sa_flags = SA_SIGINFO;
  sigemptyset(&a.sa_mask);
  sigaction(SIGTERM, &a, &g_replaced);
  std::printf("ready\n");
  std::fflush(stdout);
  usleep(1500000);
  CHECK(cudaFree(d));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 64;
  const char* mode = argv[1];
  int code = argc > 2 && std::strcmp(mode, "churn") != 0 ? std::atoi(argv[2]) : 0;
  if (!std::strcmp(mode, "free")) free_behind_kernel();
  else if (!std::strcmp(mode, "pageable")) pageable_behind_kernel();
  else if (!std::strcmp(mode, "sync")) sync_on_kernel();
  else if (!std::strcmp(mode, "pageable-ledger")) pageable_ledger();
  else if (!std::strcmp(mode, "threads")) threads();
  else if (!std::strcmp(mode, "parallel")) parallel_frees();
  else if (!std::strcmp(mode, "fork")) {
    sync_on_kernel();
    pid_t child = fork();
    if (child == 0) std::exit(0);  // atexit handlers run here too
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 2;
  }
  else if (!std::strcmp(mode, "forkload") && argc > 2) return fork_under_load(std::atoi(argv[2]));
  else if (!std::strcmp(mode, "churn") && argc > 2) churn(std::atoi(argv[2]));
  else if (!std::strcmp(mode, "sigread")) return blocked_read();
  else if (!std::strcmp(mode, "sigign")) return ignored_signals();
  else if (!std::strcmp(mode, "sigign-exec")) std::printf("SigIgn: %s\n", status_field("SigIgn").c_str());
  else if (!std::strcmp(mode, "late")) late_handler();
  else if (!std::strcmp(mode, "sleep") || !std::strcmp(mode, "handler") || !std::strcmp(mode, "dfl-siginfo")) {
    if (!std::strcmp(mode, "handler")) signal(SIGTERM, on_term);
    if (!std::strcmp(mode, "dfl-siginfo")) {
      struct sigaction a;
      std::memset(&a, 0, sizeof(a));
      a.sa_flags = SA_SIGINFO;
      a.sa_sigaction = nullptr;  // SIG_DFL
      sigemptyset(&a.sa_mask);
      sigaction(SIGTERM, &a, nullptr);
    }
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
