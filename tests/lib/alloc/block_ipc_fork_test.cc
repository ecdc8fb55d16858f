// Note [Block IPC after a fork] (lib/alloc/block_ipc.cc): a child forked
// while another thread of its parent holds block IPC's locks never waits
// for them; its exports are its own (handles naming the child, served by a
// socket server of its own), and the parent's exports and imports are not
// its.
//
// Each test runs in a process of its own (forked from the test binary): it
// exports a block of an allocator on the simulated driver (which starts the
// socket server), then forks. The child must finish within kChildSeconds (a
// child that hangs is killed and fails the test) and exits through exit().
// The children start a thread (their own socket server), which TSan refuses
// after a multi-threaded fork unless told: die_after_fork=0
// (tests/lib/CMakeLists.txt).
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>

#include "child_process.h"
#include "alloc/block_ipc.h"
#include "alloc/block_ipc_socket.h"
#include "alloc/device_allocator.h"
#include "sim_driver.h"

namespace gpuslack {
namespace alloc {
namespace {

using test_support::kMiB;
constexpr double kChildSeconds = 20;

int in_own_process(const std::function<int()>& body, double seconds) {
  return test::in_own_process(body, seconds, alloc::register_block_ipc_fork_handlers);  // as session::start does under gpuslack
}

// The exporter's pid and the export's id, as a handle carries them (the
// layout of block_ipc.cc's Wire: magic[8], pid, layout fd, id; the layout
// fd is read in parent_exports).
int32_t pid_of(const cudaIpcMemHandle_t& h) {
  int32_t pid;
  std::memcpy(&pid, h.reserved + 8, sizeof(pid));
  return pid;
}
uint64_t id_of(const cudaIpcMemHandle_t& h) {
  uint64_t id;
  std::memcpy(&id, h.reserved + 16, sizeof(id));
  return id;
}
uint32_t chunks_of(const cudaIpcMemHandle_t& h) {
  uint32_t chunks;
  std::memcpy(&chunks, h.reserved + 44, sizeof(chunks));
  return chunks;
}

DeviceAllocator* g_allocator = nullptr;
void* g_exported = nullptr;  // the parent's exported block
int g_parent_layout_fd = -1;  // its layout's descriptor, in the parent

// What a child does with block IPC; each step takes a lock the parent's
// holder may hold. 0 when all went as it should.
int child_uses_ipc() {
  // Not a block opened here: the runtime's (the imports' lock).
  cudaError_t r;
  if (ipc_close_handle(g_exported, &r)) return 7;
  uintptr_t base;
  size_t size;
  if (ipc_imported_range(g_exported, &base, &size)) return 8;
  // The child's copies of the parent's export descriptors are closed: left
  // open, they would hold the parent's chunks for as long as the child
  // lives. (Before the child's own export, which may reuse the numbers.)
  if (fcntl(g_parent_layout_fd, F_GETFD) != -1 || errno != EBADF) return 9;
  // The parent's export is not the child's: the same block exported here
  // gets a handle naming the child (the exports' lock).
  cudaIpcMemHandle_t h;
  if (ipc_get_handle(g_allocator, g_exported, &h) != cudaSuccess) return 2;
  if (pid_of(h) != static_cast<int32_t>(getpid())) return 3;
  // The child serves its own exports over the socket (where pidfd_getfd is
  // refused, importers ask there): its own server, not its parent's.
  ipc_socket::Chunks got;
  // An answer of another number of chunks than the handle says is refused
  // before anything is sized from it.
  if (ipc_socket::fetch(getpid(), id_of(h), chunks_of(h) + 1, false, &got) || !got.bytes.empty()) return 10;
  if (!ipc_socket::fetch(getpid(), id_of(h), chunks_of(h), false, &got)) return 4;
  if (got.fds.empty() || got.fds.size() != got.bytes.size()) return 5;
  for (int fd : got.fds) close(fd);
  // A handle whose exporter is gone: refused, as without the fork.
  cudaIpcMemHandle_t gone = h;
  int32_t no_such_pid = 0x3ffffff0;
  std::memcpy(gone.reserved + 8, &no_such_pid, sizeof(no_such_pid));
  void* p = nullptr;
  if (ipc_open_handle(gone, 0, &p) != cudaErrorInvalidValue) return 6;
  ipc_block_freed(g_exported);
  return 0;
}

// Makes the allocator and exports a block (the server starts).
bool parent_exports() {
  g_allocator = new DeviceAllocator(cuda::driver(), 0, 256 * kMiB, 0);
  if (!g_allocator->ok()) return false;
  g_exported = g_allocator->allocate(4 * kMiB);
  cudaIpcMemHandle_t h;
  if (!g_exported || ipc_get_handle(g_allocator, g_exported, &h) != cudaSuccess ||
      pid_of(h) != static_cast<int32_t>(getpid()))
    return false;
  std::memcpy(&g_parent_layout_fd, h.reserved + 12, sizeof(g_parent_layout_fd));
  // The export just started the socket's server thread. A fork while that
  // thread is still starting up, or still freeing what it answered, can
  // leave ASan's own allocator lock held in the child, where the child's
  // first allocation on another thread then waits forever (seen 2 in 60
  // runs of the ASan build; glibc's malloc resets its locks at a fork,
  // ASan's allocator here does not). One answered request, then a pause,
  // and the thread waits in accept() when the test forks.
  ipc_socket::Chunks got;
  if (!ipc_socket::fetch(getpid(), id_of(h), chunks_of(h), false, &got)) return false;
  for (int fd : got.fds) close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return fcntl(g_parent_layout_fd, F_GETFD) != -1;
}

int fork_and_wait() {
  const int code = test::fork_and_wait(child_uses_ipc, kChildSeconds);
  return code == -1 || code == test::kHungOnASanitizerLock ? 10 : code == -2 ? 11 : code;  // 10: hung
}

void call(void* f) { (*static_cast<std::function<void()>*>(f))(); }

TEST(BlockIpcFork, TheChildNeverWaitsForTheIpcLocks) {
  EXPECT_EQ(0, in_own_process(
                   [] {
                     if (!parent_exports()) return 20;
                     std::atomic<int> stage{0};
                     test::BigStackThread holder([&] {
                       std::function<void()> f = [&] {
                         stage = 1;
                         while (stage.load() != 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                       };
                       testing::while_holding_ipc_locks(call, &f);
                     });
                     while (stage.load() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                     int r = fork_and_wait();
                     stage = 2;
                     holder.join();
                     // The parent is unaffected: its export, served by its own server.
                     cudaIpcMemHandle_t h;
                     ipc_socket::Chunks got;
                     if (ipc_get_handle(g_allocator, g_exported, &h) != cudaSuccess ||
                         pid_of(h) != static_cast<int32_t>(getpid()) ||
                         !ipc_socket::fetch(getpid(), id_of(h), chunks_of(h), false, &got))
                       return 30;
                     for (int fd : got.fds) close(fd);
                     return r;
                   },
                   2 * kChildSeconds + 30));
}

TEST(BlockIpcFork, TheChildServesItsOwnExports) {
  EXPECT_EQ(0, in_own_process(
                   [] {
                     if (!parent_exports()) return 20;
                     return fork_and_wait();
                   },
                   kChildSeconds + 30));
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack
