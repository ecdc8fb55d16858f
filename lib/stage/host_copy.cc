#include "stage/host_copy.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "base/fork_handler.h"
#include "base/quiet_thread.h"

namespace gpuslack {
namespace stage {
namespace {

struct Part {
  char* dst;
  const char* src;
  size_t n;
  std::atomic<int>* left;  // parts of its copy not landed yet
};

struct Helpers {
  std::mutex mu;
  std::condition_variable work;
  std::deque<Part> queue;
  int started = 0;
};

// Leaked: helpers run until exit.
std::atomic<Helpers*> g_helpers{nullptr};

Helpers& helpers() {
  Helpers* h = g_helpers.load(std::memory_order_acquire);
  if (__builtin_expect(h != nullptr, 1)) return *h;
  auto* made = new Helpers();
  if (g_helpers.compare_exchange_strong(h, made, std::memory_order_acq_rel)) return *made;
  delete made;  // another thread's came first
  return *h;
}

// In the child of a fork (Note [The stager after a fork] in
// staged_copy.cc) the parent's helper threads are gone, and their queue,
// its lock and condition variable with them (a thread may have held the
// lock; dead waiters may be counted in the condition variable): the child
// leaves them behind unread, and its first host copy on several threads
// starts helpers of its own. No lock, no allocation.
// The parent's helpers the child leaves behind, kept reachable (never read,
// never freed: a thread of the parent may have held its locks), so that a
// leak checker in the child does not report it.
Helpers* g_parents_helpers = nullptr;
void forget_after_fork_child() { g_parents_helpers = g_helpers.exchange(nullptr, std::memory_order_relaxed); }
std::atomic<bool> g_fork_handler_registered{false};

void run(const Part& p) {
  std::memcpy(p.dst, p.src, p.n);
  p.left->fetch_sub(1, std::memory_order_release);
}

void helper_loop(Helpers* helpers) {
  Helpers& h = *helpers;
  for (;;) {
    Part p;
    {
      std::unique_lock<std::mutex> lock(h.mu);
      h.work.wait(lock, [&] { return !h.queue.empty(); });
      p = h.queue.front();
      h.queue.pop_front();
    }
    run(p);
  }
}

}  // namespace

void register_host_copy_fork_handler() { register_fork_child_once(g_fork_handler_registered, forget_after_fork_child); }

void host_copy(void* dst, const void* src, size_t n, int threads) {
  threads = std::clamp(threads, 1, kMaxCopyThreads);
  size_t parts = std::min<size_t>(static_cast<size_t>(threads), std::max<size_t>(1, n / kMinPartBytes));
  if (parts <= 1) {
    std::memcpy(dst, src, n);
    return;
  }
  Helpers& h = helpers();
  std::atomic<int> left{static_cast<int>(parts)};
  const size_t step = (n / parts + 63) / 64 * 64;
  auto* d = static_cast<char*>(dst);
  auto* s = static_cast<const char*>(src);
  {
    std::lock_guard<std::mutex> lock(h.mu);
    while (h.started < static_cast<int>(parts) - 1 && h.started < kMaxCopyThreads - 1) {
      start_quiet_thread(helper_loop, &h).detach();
      ++h.started;
    }
    for (size_t i = 1; i < parts; ++i) {
      size_t off = i * step;
      if (off >= n) {
        left.fetch_sub(1, std::memory_order_relaxed);
        continue;
      }
      h.queue.push_back({d + off, s + off, std::min(step, n - off), &left});
    }
  }
  h.work.notify_all();
  run({d, s, std::min(step, n), &left});
  // Take back whatever of ours no helper has started.
  for (;;) {
    Part mine{};
    bool found = false;
    {
      std::lock_guard<std::mutex> lock(h.mu);
      auto it = std::find_if(h.queue.begin(), h.queue.end(), [&](const Part& p) { return p.left == &left; });
      if (it != h.queue.end()) {
        mine = *it;
        h.queue.erase(it);
        found = true;
      }
    }
    if (!found) break;
    run(mine);
  }
  while (left.load(std::memory_order_acquire) > 0) std::this_thread::yield();
}

namespace testing {
void while_holding_host_copy_lock(absl::FunctionRef<void()> during) {
  std::lock_guard<std::mutex> lock(helpers().mu);
  during();
}
}  // namespace testing

}  // namespace stage
}  // namespace gpuslack
