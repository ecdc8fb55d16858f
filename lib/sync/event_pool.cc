// See event_pool.h. The lists live in a fixed table of pointers, made on a
// device's first give_event and leaked (exit and fork: event_pool.h).
#include "sync/event_pool.h"

#include <algorithm>
#include <mutex>
#include <new>
#include <vector>

#include "cuda/runtime_api.h"

namespace gpuslack {
namespace sync {
namespace {

constexpr int kKinds = 2;

std::mutex g_mu;
std::vector<cudaEvent_t>* g_free[kMaxEventDevices][kKinds];  // guarded by g_mu

bool valid(int device) { return device >= 0 && device < kMaxEventDevices; }
int index(EventKind kind) { return kind == EventKind::kTiming ? 1 : 0; }

// Makes an event on `device`, switching the current device for the call
// when it is another one.
__attribute__((noinline, cold)) cudaEvent_t make_event(int device, EventKind kind) {
  const cudaError_t before = cuda::peek_at_last_error();
  const unsigned int flags = kind == EventKind::kTiming ? cudaEventDefault : cudaEventDisableTiming;
  cudaEvent_t e = nullptr;
  int current = -1;
  if (cuda::get_device(&current) == cudaSuccess && (current == device || cuda::set_device(device) == cudaSuccess)) {
    if (cuda::event_create(&e, flags) != cudaSuccess) e = nullptr;
    if (current != device) cuda::set_device(current);
  }
  if (!e && before == cudaSuccess) cuda::get_last_error();
  return e;
}

}  // namespace

PooledEvent take_event(int device, EventKind kind) {
  if (!valid(device)) return {};
  {
    std::lock_guard<std::mutex> lock(g_mu);
    std::vector<cudaEvent_t>* list = g_free[device][index(kind)];
    if (list && !list->empty()) {
      cudaEvent_t e = list->back();
      list->pop_back();
      return {e, device, kind};
    }
  }
  cudaEvent_t e = make_event(device, kind);
  if (!e) return {};
  return {e, device, kind};
}

void give_event(PooledEvent e) {
  if (!e || !valid(e.device)) return;
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<cudaEvent_t>*& list = g_free[e.device][index(e.kind)];
  if (!list) list = new std::vector<cudaEvent_t>();
  list->push_back(e.event);
}

void events_after_fork_child() {
  // The parent's lists stay allocated (and reachable, for leak checkers),
  // unread. Four generations are kept so; a fork of a fork past that leaves
  // its parent's lists unreachable.
  using Table = std::vector<cudaEvent_t>* [kMaxEventDevices][kKinds];
  [[maybe_unused]] static Table volatile left_behind[4];  // volatile: the stores stay
  static int n_left_behind = 0;
  if (n_left_behind < 4) {
    for (int d = 0; d < kMaxEventDevices; ++d)
      for (int k = 0; k < kKinds; ++k) left_behind[n_left_behind][d][k] = g_free[d][k];
    ++n_left_behind;
  }
  for (auto& row : g_free) std::fill(std::begin(row), std::end(row), nullptr);
  new (&g_mu) std::mutex();
}

namespace testing {

void while_holding_event_pool_lock(void (*during)(void*), void* arg) {
  std::lock_guard<std::mutex> lock(g_mu);
  during(arg);
}

size_t free_events(int device, EventKind kind) {
  if (!valid(device)) return 0;
  std::lock_guard<std::mutex> lock(g_mu);
  const std::vector<cudaEvent_t>* list = g_free[device][index(kind)];
  return list ? list->size() : 0;
}

}  // namespace testing

}  // namespace sync
}  // namespace gpuslack
