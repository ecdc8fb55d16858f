#include "sync/event_pool.h"

#include <mutex>
#include <vector>

#include "cuda/runtime_api.h"

namespace gpuslack {
namespace pin {
namespace {

struct Free {
  int device;
  std::vector<cudaEvent_t> events;
};

std::mutex g_mu;
std::vector<Free>* g_free = nullptr;  // leaked: events live until exit

std::vector<cudaEvent_t>& free_list(int device) {
  if (!g_free) g_free = new std::vector<Free>();
  for (Free& f : *g_free)
    if (f.device == device) return f.events;
  g_free->push_back({device, {}});
  return g_free->back().events;
}

}  // namespace

PooledEvent take_event(int device) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    std::vector<cudaEvent_t>& list = free_list(device);
    if (!list.empty()) {
      cudaEvent_t e = list.back();
      list.pop_back();
      return {e, device};
    }
  }
  cudaEvent_t e = nullptr;
  if (cuda::event_create(&e, cudaEventDisableTiming) != cudaSuccess) {
    cuda::get_last_error();
    return {};
  }
  return {e, device};
}

void give_event(PooledEvent e) {
  if (!e) return;
  std::lock_guard<std::mutex> lock(g_mu);
  free_list(e.device).push_back(e.event);
}

}  // namespace pin
}  // namespace gpuslack
