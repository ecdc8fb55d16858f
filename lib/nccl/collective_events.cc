#include "nccl/collective_events.h"

#include <algorithm>
#include <mutex>
#include <new>
#include <vector>

#include "cuda/runtime_api.h"

namespace gpuslack {
namespace ledger {
namespace {

constexpr int kMaxDevices = 64;

std::mutex g_mu;
// Leaked on purpose: the pool may be used during exit (the summary resolves
// pending events from an atexit handler).
std::vector<cudaEvent_t>* g_free[kMaxDevices];  // guarded by g_mu

__attribute__((noinline, cold)) cudaEvent_t make_event(int device) {
  int current = -1;
  if (cuda::get_device(&current) != cudaSuccess) return nullptr;
  if (current != device && cuda::set_device(device) != cudaSuccess) return nullptr;
  cudaEvent_t e = nullptr;
  if (cuda::event_create(&e, cudaEventDefault) != cudaSuccess) e = nullptr;
  if (current != device) cuda::set_device(current);
  return e;
}

}  // namespace

namespace detail {
std::mutex& events_mutex() { return g_mu; }
}  // namespace detail

cudaEvent_t acquire_event(int device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    std::vector<cudaEvent_t>* list = g_free[device];
    if (list && !list->empty()) {
      cudaEvent_t e = list->back();
      list->pop_back();
      return e;
    }
  }
  return make_event(device);
}

void release_event(int device, cudaEvent_t event) {
  if (event == nullptr || device < 0 || device >= kMaxDevices) return;
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_free[device]) g_free[device] = new std::vector<cudaEvent_t>();
  g_free[device]->push_back(event);
}

void events_after_fork_child() {
  // The lists stay allocated (and reachable, for leak checkers), unread.
  [[maybe_unused]] static std::vector<cudaEvent_t>* volatile left_behind[4][kMaxDevices];  // volatile: the stores stay
  static int n_left_behind = 0;
  if (n_left_behind < 4) {
    for (int d = 0; d < kMaxDevices; ++d) left_behind[n_left_behind][d] = g_free[d];
    ++n_left_behind;
  }
  std::fill(std::begin(g_free), std::end(g_free), nullptr);
  new (&g_mu) std::mutex();
}

}  // namespace ledger
}  // namespace gpuslack
