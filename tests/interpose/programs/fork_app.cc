// A program that forks while another thread runs the VMM allocator's cached
// pair (cudaMallocAsync/cudaFreeAsync served by its front cache without the
// allocator's lock), for fork_test.py: the child must never wait for a lock
// that a thread of its parent held at the fork (Note [The allocators after
// a fork] in lib/alloc/process_allocators.cc). Real runtime API calls only;
// linked against the simulated runtime, run with libgpuslack.so preloaded
// (allocator:vmm).
//
// Usage: fork_app FORKS
//   A second thread loops cudaMallocAsync + cudaFreeAsync of 4 KiB on
//   stream 0 (its front cache's lock is held for most of each pair) and
//   holds one more block that its front cache keeps a record of.
//   The main thread, after its own cached pairs on stream 0 and one
//   cudaMalloc, forks FORKS times. Each child, on the forking thread:
//   mallocs and frees host memory; asks cudaMemGetInfo; frees the parent's
//   blocks (the cudaMalloc one, and the one the other thread's front
//   holds); allocates and frees on stream 0 and with cudaMalloc; then
//   exit(0), which runs the atexit handlers (the child's own summary). Each
//   child's answers are printed, on one line, to stdout:
//     child <i> get_info <e> free_parent <e> free_front_held <e> malloc <e> free <e> async <e>
//   (<e>: the cudaError_t number). A child that has not exited 20 s after
//   its fork is hung: its stacks printed to stderr, killed, and no more
//   forks; one hung on a lock of the sanitizer's runtime is not counted,
//   a bounded number of times (Note [A sanitizer's lock held at a fork],
//   tests/lib/hung_child.h).
// Ends with "sanitizer_hangs <s>" (children forked again, whose fork
// number a second child line may repeat, and who may have written a
// summary) and "forks <n> hung <h> failed <f>" (failed: children that exited
// otherwise than 0); exits 0 when none hung or failed, 2 otherwise, 1 on a
// CUDA error in the parent.
#include <cuda_runtime_api.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "child_process.h"

#define CHECK(x)                                                             \
  do {                                                                       \
    cudaError_t e_ = (x);                                                    \
    if (e_ != cudaSuccess) {                                                 \
      std::fprintf(stderr, "fork_app: %s: %s\n", #x, cudaGetErrorName(e_)); \
      std::exit(1);                                                          \
    }                                                                        \
  } while (0)

namespace {

constexpr size_t kPair = 4096;

// What a child does with CUDA and the host heap; its exit code.
int child(int i, void* parent_block, void* front_held, void* parent_pinned) {
  void* host = std::malloc(1 << 20);
  if (!host) return 3;
  std::memset(host, 1, 1 << 20);
  std::free(host);
  size_t free_b = 0, total = 0;
  cudaError_t info = cudaMemGetInfo(&free_b, &total);
  cudaError_t free_parent = cudaFree(parent_block);
  cudaError_t free_held = cudaFreeAsync(front_held, nullptr);
  void* p = nullptr;
  cudaError_t m = cudaMalloc(&p, 1 << 20);
  cudaError_t f = m == cudaSuccess ? cudaFree(p) : cudaSuccess;
  void* q = nullptr;
  cudaError_t a = cudaMallocAsync(&q, kPair, nullptr);
  if (a == cudaSuccess) a = cudaFreeAsync(q, nullptr);
  cudaError_t free_pinned = cudaFreeHost(parent_pinned);
  void* h = nullptr;
  cudaError_t pinned = cudaMallocHost(&h, kPair);
  if (pinned == cudaSuccess) pinned = cudaFreeHost(h);
  std::printf("child %d get_info %d free_parent %d free_front_held %d malloc %d free %d async %d "
              "free_parent_pinned %d pinned %d\n", i, static_cast<int>(info), static_cast<int>(free_parent),
              static_cast<int>(free_held), static_cast<int>(m), static_cast<int>(f), static_cast<int>(a),
              static_cast<int>(free_pinned), static_cast<int>(pinned));
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::atoi(argv[1]) <= 0) {
    std::fprintf(stderr, "usage: fork_app FORKS\n");
    return 2;
  }
  const int forks = std::atoi(argv[1]);
  CHECK(cudaSetDevice(0));
  void* parent_block = nullptr;
  CHECK(cudaMalloc(&parent_block, 1 << 20));
  // The main thread's own front (its ThreadFronts entry survives into the child).
  for (int k = 0; k < 4; ++k) {
    void* p = nullptr;
    CHECK(cudaMallocAsync(&p, kPair, nullptr));
    CHECK(cudaFreeAsync(p, nullptr));
  }
  void* parent_pinned = nullptr;
  CHECK(cudaMallocHost(&parent_pinned, kPair));
  std::atomic<bool> stop{false};
  std::atomic<long> pairs{0}, pinned_pairs{0};
  std::atomic<void*> front_held{nullptr};
  std::thread hammer([&] {
    // Stream 0: the hook asks the runtime nothing about it, so the
    // simulated runtime's own locks (which are not fork-safe, as a real
    // driver's state is not usable in a forked child) are not held at the
    // fork; gpuslack's are.
    cudaStream_t s = nullptr;
    // A block with a live record in this thread's front: allocated,
    // freed into the front, allocated again from it.
    void* held = nullptr;
    CHECK(cudaMallocAsync(&held, 2 * kPair, s));
    CHECK(cudaFreeAsync(held, s));
    CHECK(cudaMallocAsync(&held, 2 * kPair, s));
    front_held = held;
    while (!stop.load(std::memory_order_relaxed)) {
      void* p = nullptr;
      CHECK(cudaMallocAsync(&p, kPair, s));
      CHECK(cudaFreeAsync(p, s));
      pairs.fetch_add(1, std::memory_order_relaxed);
    }
    CHECK(cudaFreeAsync(held, s));
    CHECK(cudaStreamSynchronize(s));
  });
  // A third thread loops the pinned heap's pair (its lock held for most of
  // each call).
  std::thread pinner([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      void* h = nullptr;
      CHECK(cudaMallocHost(&h, kPair));
      CHECK(cudaFreeHost(h));
      pinned_pairs.fetch_add(1, std::memory_order_relaxed);
    }
  });
  while (pairs.load() < 1000 || pinned_pairs.load() < 1000) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::fflush(stdout);
  int hung = 0, failed = 0, forked = 0, sanitizer_hangs = 0, tries = 0;  // tries: of this fork number
  for (int i = 0; i < forks && hung == 0; ++i, ++forked) {
    pid_t pid = fork();
    if (pid == 0) std::exit(child(i, parent_block, front_held.load(), parent_pinned));
    if (pid < 0) {
      std::perror("fork");
      break;
    }
    const int status = gpuslack::test::wait_for_child(pid, 20);
    if (status == gpuslack::test::kHungOnASanitizerLock && ++tries < gpuslack::test::kForksPerSanitizerHang) {
      ++sanitizer_hangs;
      --i, --forked;  // Note [A sanitizer's lock held at a fork]: not counted, forked again
      continue;
    }
    tries = 0;
    if (status == -1 || status == gpuslack::test::kHungOnASanitizerLock)
      ++hung;
    else if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      ++failed;
  }
  stop = true;
  hammer.join();
  pinner.join();
  CHECK(cudaFree(parent_block));
  CHECK(cudaFreeHost(parent_pinned));
  std::printf("pairs %ld pinned_pairs %ld\nsanitizer_hangs %d\nforks %d hung %d failed %d\n", pairs.load(),
              pinned_pairs.load(), sanitizer_hangs, forked, hung, failed);
  return hung || failed ? 2 : 0;
}
