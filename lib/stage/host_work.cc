#include "stage/host_work.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <new>
#include <vector>

#include "base/fork_handler.h"
#include "cuda/runtime_api.h"
#include "sync/event_pool.h"

namespace gpuslack {
namespace stage {
namespace {

struct Entry {
  uint64_t key;        // 0 once the stream was destroyed
  cudaStream_t handle;
  int device;
  bool legacy;
  bool blocking;
  sync::PooledEvent event;   // empty: unknown
};

std::mutex g_mu;
std::vector<Entry>* g_entries = nullptr;  // leaked; guarded by g_mu
std::atomic<int> g_count{0};

std::vector<Entry>& entries() {
  if (!g_entries) g_entries = new std::vector<Entry>();
  return *g_entries;
}

// In the child of a fork (Note [The stager after a fork] in
// staged_copy.cc): the parent's entries, their events and the lock a thread
// of the parent may have held are left behind unread; the child starts
// with none. No lock, no allocation.
// The parent's entries the child leaves behind, kept reachable (never read,
// never freed: a thread of the parent may have held its locks), so that a
// leak checker in the child does not report it.
std::vector<Entry>* g_parents_entries = nullptr;

void forget_after_fork_child() {
  new (&g_mu) std::mutex();
  g_parents_entries = g_entries;
  g_entries = nullptr;
  g_count.store(0, std::memory_order_relaxed);
}
std::atomic<bool> g_fork_handler_registered{false};

void publish_count() { g_count.store(static_cast<int>(entries().size()), std::memory_order_release); }

// Entries of finished work are dropped when a staged copy waits; a program
// that makes none would keep one per stream ever used, and per-thread
// streams come and go with threads (Note [Exited threads] in
// ledger/ledger.h). So when the list reaches g_reap_at, finished entries go
// (their events back to the pool) and the mark doubles past what is left.
size_t g_reap_at = 64;  // guarded by g_mu; the parent's in a forked child (harmless: a mark)

void reap_finished_locked() {
  auto& all = entries();
  if (all.size() < g_reap_at) return;
  all.erase(std::remove_if(all.begin(), all.end(),
                           [](Entry& e) {
                             if (!e.event) return false;  // unknown: a drain must still see it
                             cudaError_t r = cuda::event_query(e.event.event);
                             if (r == cudaErrorNotReady) return false;
                             if (r != cudaSuccess) cuda::get_last_error();
                             sync::give_event(e.event);
                             return true;
                           }),
            all.end());
  g_reap_at = std::max<size_t>(64, 2 * all.size());
}

// Whether a drain of `s` (blocking or not: `s_blocking`) covers work on `e`.
bool covers(const StreamRef& s, bool s_blocking, const Entry& e) {
  if (e.device != s.device) return false;
  if (e.key != 0 && e.key == s.key) return true;
  if (s.legacy) return e.blocking;
  if (s_blocking) return e.legacy || e.blocking;
  return false;
}

}  // namespace

void register_host_work_fork_handler() { register_fork_child_once(g_fork_handler_registered, forget_after_fork_child); }

void host_work_enqueued(const StreamRef& s, bool may_call_runtime) {
  bool blocking = may_call_runtime ? is_blocking(s) : !s.legacy;
  std::lock_guard<std::mutex> lock(g_mu);
  auto& all = entries();
  auto it = std::find_if(all.begin(), all.end(), [&](const Entry& e) { return e.key == s.key; });
  if (it == all.end()) {
    if (may_call_runtime) reap_finished_locked();
    all.push_back({s.key, s.handle, s.device, s.legacy, blocking, {}});
    it = all.end() - 1;
  }
  if (!may_call_runtime) {
    sync::give_event(it->event);
    it->event = {};
    publish_count();
    return;
  }
  if (!it->event) it->event = sync::take_event(s.device, sync::EventKind::kNoTiming);
  // Re-recording covers every earlier piece of work on the stream too.
  if (!it->event || cuda::event_record(it->event.event, s.handle) != cudaSuccess) {
    cuda::get_last_error();
    sync::give_event(it->event);
    it->event = {};  // unknown until a later record succeeds
  }
  publish_count();
}

bool host_work_pending() { return g_count.load(std::memory_order_relaxed) > 0; }

HostWorkWait wait_for_host_work(const StreamRef& s) {
  HostWorkWait w;
  if (!host_work_pending()) return w;
  bool s_blocking = is_blocking(s);
  std::vector<std::pair<cudaEvent_t, bool>> waits;  // event, other stream
  std::vector<cudaStream_t> drains;                 // unknown work on other streams
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto& all = entries();
    for (size_t i = 0; i < all.size();) {
      Entry& e = all[i];
      if (e.event) {
        cudaError_t r = cuda::event_query(e.event.event);
        if (r != cudaErrorNotReady) {
          if (r != cudaSuccess) cuda::get_last_error();
          sync::give_event(e.event);
          all.erase(all.begin() + static_cast<long>(i));
          continue;
        }
      }
      if (covers(s, s_blocking, e)) {
        if (e.event) {
          waits.push_back({e.event.event, e.key != s.key});
        } else if (e.key != s.key && e.key != 0 && !(e.handle == cudaStreamPerThread)) {
          // Unknown work on another stream: wait for that whole stream (more
          // than needed, never less), then it is known to be done.
          drains.push_back(e.handle);
          all.erase(all.begin() + static_cast<long>(i));
          continue;
        } else {
          w.unknown = true;  // this stream's own, or one gpuslack cannot name
        }
      }
      ++i;
    }
    publish_count();
  }
  if (w.unknown || (waits.empty() && drains.empty())) return w;
  auto start = std::chrono::steady_clock::now();
  for (cudaStream_t d : drains) {
    if (cuda::stream_synchronize(d) != cudaSuccess) cuda::get_last_error();
    ++w.streams;
    ++w.other_streams;
  }
  for (auto& [event, other] : waits) {
    // Pooled events are never destroyed: if this one was reaped and reused
    // meanwhile, waiting for it is only a longer wait, never a wrong one.
    if (cuda::event_synchronize(event) != cudaSuccess) cuda::get_last_error();
    ++w.streams;
    if (other) ++w.other_streams;
  }
  w.waited_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  return w;
}

void host_work_stream_destroyed(cudaStream_t stream) {
  if (!host_work_pending()) return;
  const uint64_t key = reinterpret_cast<uintptr_t>(stream);
  std::lock_guard<std::mutex> lock(g_mu);
  auto& all = entries();
  for (Entry& e : all)
    if (e.key == key) e.key = 0;
  // Unknown work of a destroyed stream can no longer be waited for by name.
  all.erase(std::remove_if(all.begin(), all.end(), [](const Entry& e) { return e.key == 0 && !e.event; }), all.end());
  publish_count();
}

void reset_host_work() {
  std::lock_guard<std::mutex> lock(g_mu);
  for (Entry& e : entries()) sync::give_event(e.event);
  entries().clear();
  g_reap_at = 64;
  publish_count();
}

size_t host_work_entries() {
  std::lock_guard<std::mutex> lock(g_mu);
  return entries().size();
}

namespace testing {
void while_holding_host_work_lock(absl::FunctionRef<void()> during) {
  std::lock_guard<std::mutex> lock(g_mu);
  during();
}
}  // namespace testing

}  // namespace stage
}  // namespace gpuslack
