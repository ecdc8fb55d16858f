// Note [The stager after a fork] (lib/stage/staged_copy.cc): a child forked
// while another thread of its parent holds the staged copies' locks never
// waits for them, takes the runtime's own path for its copies, and runs its
// host copies on threads of its own.
//
// Each test runs in a process of its own (forked from the test binary), in
// which the stager is made and used; then the main thread forks, and the
// child must finish within kChildSeconds (a child that hangs is killed and
// fails the test). The child exits through exit(), as a data-loader worker
// does.
//
// The simulated runtime's stream workers are not in a forked child (work
// it enqueues on an inherited stream never runs: tests/simcuda/README.md),
// so the child's copies go to `native` below, which copies with memcpy
// (the simulated device's memory is the host's) and counts its calls.
//
// The children start threads (host copy helpers), which TSan refuses after
// a multi-threaded fork unless told: die_after_fork=0 (tests/lib/CMakeLists.txt).
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "child_process.h"
#include "cuda/pointer_kind.h"
#include "stage/host_copy.h"
#include "stage/host_work.h"
#include "stage/staged_copy.h"

namespace gpuslack {
namespace stage {
namespace {

constexpr double kChildSeconds = 20;
constexpr size_t kMiB = 1024 * 1024;

// Runs `body` in a process of its own: its exit code, or -1 if it did not exit.
int in_own_process(const std::function<int()>& body, double seconds) {
  return test::in_own_process(body, seconds, stage::register_fork_handlers);  // as session::start does under gpuslack
}

// Forks; the child runs `in_child` and exits through exit(). The child's
// exit code, 10 if it hung, 11 if it did not exit.
int fork_and_wait(int (*in_child)()) {
  const int code = test::fork_and_wait(in_child, kChildSeconds);
  return code == -1 || code == test::kHungOnASanitizerLock ? 10 : code == -2 ? 11 : code;  // 10: hung
}

std::atomic<int> g_native_calls{0};

// The runtime's own call, as the route makes it; in a forked child, a
// memcpy (see above).
cudaError_t native(const CopyCall& c, void*) {
  g_native_calls.fetch_add(1);
  if (getenv("STAGE_FORK_TEST_CHILD")) {
    std::memcpy(c.dst, c.src, c.width);
    return cudaSuccess;
  }
  return c.sync_api ? cudaMemcpy(c.dst, c.src, c.width, c.kind)
                    : cudaMemcpyAsync(c.dst, c.src, c.width, c.kind, c.stream);
}

CopyCall linear(void* dst, const void* src, size_t n, cudaMemcpyKind kind, bool sync_api) {
  CopyCall c = CopyCall::linear(dst, src, n, kind, nullptr);
  c.sync_api = sync_api;
  return c;
}

int threads_of_this_process() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

void* g_device = nullptr;  // 8 MiB, made by the parent

// What a child does with the staged copies: a pageable copy each way of
// 8 MiB (staged in the parent), the host work of a host function, a host
// copy on 4 threads. Each either takes a lock the holder held (before the
// fix: the child hangs) or must take the runtime's path.
int child_copies() {
  setenv("STAGE_FORK_TEST_CHILD", "1", 1);
  cuda::invalidate_pointer_kinds();
  std::vector<char> in(8 * kMiB), out(8 * kMiB, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<char>(i * 7 + 3);
  const int before = g_native_calls.load();
  if (stager().copy(linear(g_device, in.data(), in.size(), cudaMemcpyHostToDevice, false), native, nullptr) !=
      cudaSuccess)
    return 2;
  if (stager().copy(linear(out.data(), g_device, out.size(), cudaMemcpyDeviceToHost, true), native, nullptr) !=
      cudaSuccess)
    return 3;
  if (in != out) return 4;
  // Both went to the runtime: the parent's stager (its pool of pinned
  // memory, its pending host work) is not the child's.
  if (g_native_calls.load() - before != 2) return 5;
  note_host_work(nullptr, false);  // what the hook of cudaLaunchHostFunc does
  std::vector<char> copy(8 * kMiB, 0);
  host_copy(copy.data(), in.data(), in.size(), 4);
  if (copy != in) return 6;
  return 0;
}

// The parent: makes the stager and its staging memory with one staged copy
// each way, and host work pending.
bool parent_copies() {
  if (cudaMalloc(&g_device, 8 * kMiB) != cudaSuccess) return false;
  cuda::invalidate_pointer_kinds();
  std::vector<char> in(8 * kMiB, 5), out(8 * kMiB, 0);
  if (stager().copy(linear(g_device, in.data(), in.size(), cudaMemcpyHostToDevice, false), native, nullptr) !=
      cudaSuccess)
    return false;
  if (stager().copy(linear(out.data(), g_device, out.size(), cudaMemcpyDeviceToHost, true), native, nullptr) !=
      cudaSuccess)
    return false;
  if (in != out || stager().stats().h2d.staged != 1) return false;
  std::vector<char> copy(8 * kMiB, 0);
  host_copy(copy.data(), in.data(), in.size(), 4);  // starts the helpers
  note_host_work(nullptr, false);                   // as after a cudaLaunchHostFunc
  return copy == in && host_work_pending();
}

TEST(StagerFork, TheChildNeverWaitsForTheStagersLocksAndCopiesNatively) {
  EXPECT_EQ(0, in_own_process(
                   [] {
                     if (!parent_copies()) return 20;
                     std::atomic<int> stage{0};
                     test::BigStackThread holder([&] {
                       testing::while_holding_stager_locks([&] {
                         stage = 1;
                         while (stage.load() != 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                       });
                     });
                     while (stage.load() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                     int r = fork_and_wait(child_copies);
                     stage = 2;
                     holder.join();
                     // The parent is unaffected: it still stages.
                     std::vector<char> in(8 * kMiB, 9);
                     if (stager().copy(linear(g_device, in.data(), in.size(), cudaMemcpyHostToDevice, false), native,
                                       nullptr) != cudaSuccess ||
                         stager().stats().h2d.staged != 2)
                       return 30;
                     return r;
                   },
                   2 * kChildSeconds + 30));
}

// The child's host copies run on helpers of its own: the parent's (idle,
// waiting for work, at the fork) are not in the child.
int child_host_copy() {
  if (threads_of_this_process() != 1) return 2;
  std::vector<char> in(8 * kMiB), out(8 * kMiB, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<char>(i * 13 + 1);
  host_copy(out.data(), in.data(), in.size(), 4);
  if (in != out) return 3;
  // Its own 3 helpers beside the forking thread.
  if (threads_of_this_process() != 4) return 4;
  return 0;
}

TEST(StagerFork, TheChildsHostCopiesRunOnHelpersOfItsOwn) {
  EXPECT_EQ(0, in_own_process(
                   [] {
                     std::vector<char> in(8 * kMiB, 1), out(8 * kMiB, 0);
                     host_copy(out.data(), in.data(), in.size(), 4);
                     if (in != out) return 20;
                     return fork_and_wait(child_host_copy);
                   },
                   kChildSeconds + 30));
}

// A child whose parent never made a stager stages as any process does
// (a launcher that forks its workers before any copy).
int child_of_a_parent_that_never_staged() { return stager().config().enabled ? 0 : 2; }

TEST(StagerFork, AChildOfAProcessThatNeverStagedStages) {
  EXPECT_EQ(0, in_own_process(
                   [] {
                     if (existing_stager() != nullptr || !stager_config_from_options().enabled) return 20;
                     return fork_and_wait(child_of_a_parent_that_never_staged);
                   },
                   kChildSeconds + 30));
}

}  // namespace
}  // namespace stage
}  // namespace gpuslack
