// An application that allocates pinned host memory, for the end-to-end
// tests of the pinned heap (pinned_test.py). Linked against the simulated
// runtime; run natively and with libgpuslack.so preloaded.
//
// Usage: pinned_app MODE
//   free     cudaFreeHost while a 50 ms kernel runs; prints "free_ms <ms>"
//   reuse    8 threads, each on its own non-blocking stream: a pinned block
//            of a random size and flag is filled, copied to the device behind
//            a busy kernel and freed at once; a block of the same size is
//            allocated and scribbled on right away. The copy must still
//            deliver the first block's bytes (exits 1 if not)
//   flags    cudaHostAlloc write-combined (alone and with mapped): served,
//            and cudaHostGetFlags says write-combined
//   fault    cudaMallocHost must succeed and leave no error, however the
//            runtime's first cudaHostAlloc fails (GPUSIM_FAIL)
//   trim     allocates and frees 64 MiB in blocks, then gpuslack_pinned_trim
//            (when preloaded); prints "trimmed <bytes> pinned <bytes>"
// Exits 0 after the work, 1 on a CUDA error or a wrong result.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "gpuslack/gpuslack.h"
#include "gpusim.h"

#define CHECK(x)                                                              \
  do {                                                                        \
    cudaError_t e_ = (x);                                                     \
    if (e_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "pinned_app: %s: %s\n", #x, cudaGetErrorName(e_)); \
      std::exit(1);                                                           \
    }                                                                         \
  } while (0)

namespace {

using Clock = std::chrono::steady_clock;

int free_behind_kernel() {
  void* busy;
  CHECK(cudaMalloc(&busy, 4096));
  void* h;
  CHECK(cudaMallocHost(&h, 1 << 20));
  std::memset(h, 1, 1 << 20);
  CHECK(gpusim_busy_kernel(nullptr, busy, 4096, 50000, 1, nullptr));
  auto t = Clock::now();
  CHECK(cudaFreeHost(h));
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  std::printf("free_ms %.3f\n", ms);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(busy));
  return 0;
}

int reuse_under_pending_copies() {
  const unsigned kFlags[] = {cudaHostAllocDefault, cudaHostAllocPortable, cudaHostAllocMapped,
                             cudaHostAllocPortable | cudaHostAllocMapped};
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      cudaStream_t s;
      CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      constexpr size_t kMax = 1 << 20;
      void *busy, *dev;
      CHECK(cudaMalloc(&busy, 4096));
      CHECK(cudaMalloc(&dev, kMax));
      std::mt19937 rng(t);
      std::vector<unsigned char> back(kMax);
      for (int i = 0; i < 25; ++i) {
        size_t n = 1 + rng() % kMax;
        unsigned char pattern = static_cast<unsigned char>(t * 31 + i + 1);
        void* h;
        CHECK(cudaHostAlloc(&h, n, kFlags[rng() % 4]));
        std::memset(h, pattern, n);
        CHECK(gpusim_busy_kernel(s, busy, 4096, 2000, 1, nullptr));
        CHECK(cudaMemcpyAsync(dev, h, n, cudaMemcpyHostToDevice, s));
        CHECK(cudaFreeHost(h));  // the copy has not run yet
        void* other;
        CHECK(cudaMallocHost(&other, n));
        std::memset(other, 0xEE, n);
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaMemcpy(back.data(), dev, n, cudaMemcpyDeviceToHost));
        for (size_t k = 0; k < n; ++k)
          if (back[k] != pattern) {
            ++bad;
            break;
          }
        CHECK(cudaFreeHost(other));
      }
      CHECK(cudaFree(dev));
      CHECK(cudaFree(busy));
      CHECK(cudaStreamDestroy(s));
    });
  }
  for (auto& th : threads) th.join();
  if (bad.load()) std::fprintf(stderr, "pinned_app: %d copies delivered other bytes\n", bad.load());
  return bad.load() ? 1 : 0;
}

int write_combined() {
  for (unsigned flags : {unsigned(cudaHostAllocWriteCombined), unsigned(cudaHostAllocWriteCombined | cudaHostAllocMapped)}) {
    void* p;
    CHECK(cudaHostAlloc(&p, 1 << 20, flags));
    unsigned got = 0;
    CHECK(cudaHostGetFlags(&got, p));
    if (!(got & cudaHostAllocWriteCombined)) {
      std::fprintf(stderr, "pinned_app: flags %u, not write-combined\n", got);
      return 1;
    }
    CHECK(cudaFreeHost(p));
  }
  return 0;
}

int fault() {
  void* p;
  CHECK(cudaMallocHost(&p, 4096));
  CHECK(cudaGetLastError());
  std::memset(p, 3, 4096);
  void* q;
  CHECK(cudaMallocHost(&q, 4096));
  CHECK(cudaFreeHost(q));
  CHECK(cudaFreeHost(p));
  CHECK(cudaGetLastError());
  return 0;
}

int trim() {
  std::vector<void*> blocks;
  for (int i = 0; i < 16; ++i) {
    void* p;
    CHECK(cudaMallocHost(&p, 4 << 20));
    blocks.push_back(p);
  }
  for (void* p : blocks) CHECK(cudaFreeHost(p));
  // Present only when libgpuslack.so is preloaded.
  auto pinned_trim = reinterpret_cast<unsigned long long (*)(void)>(dlsym(RTLD_DEFAULT, "gpuslack_pinned_trim"));
  auto get = reinterpret_cast<int (*)(gpuslack_pinned_stats*)>(dlsym(RTLD_DEFAULT, "gpuslack_pinned_stats_get"));
  if (!pinned_trim || !get) return 0;
  unsigned long long released = pinned_trim();
  gpuslack_pinned_stats s{};
  if (get(&s) != 0) return 1;
  std::printf("trimmed %llu pinned %llu\n", released, s.pinned);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 64;
  const char* mode = argv[1];
  if (!std::strcmp(mode, "free")) return free_behind_kernel();
  if (!std::strcmp(mode, "reuse")) return reuse_under_pending_copies();
  if (!std::strcmp(mode, "flags")) return write_combined();
  if (!std::strcmp(mode, "fault")) return fault();
  if (!std::strcmp(mode, "trim")) return trim();
  return 64;
}
