#include "alloc/graph_holds.h"

#include <algorithm>
#include <unordered_set>

#include "cuda/runtime_api.h"
#include "log/log.h"

namespace gpuslack {
namespace alloc {

void GraphHolds::graph_destroyed(void* hold) {
  static_cast<Hold*>(hold)->released.store(true, std::memory_order_release);
}

GraphHolds::Hold* GraphHolds::hold_for(unsigned long long id, cudaGraph_t graph) {
  for (Hold* h : holds_)
    if (h->id == id && !h->released.load(std::memory_order_acquire)) return h;
  auto* h = new Hold();
  h->id = id;
  holds_.push_back(h);
  cudaUserObject_t object = nullptr;
  if (cuda::user_object_create(&object, h, &graph_destroyed) == cudaSuccess &&
      cuda::graph_retain_user_object(graph, object) == cudaSuccess) {
    h->tied = true;
  } else {
    if (object) cuda::user_object_release(object);  // runs graph_destroyed: undo it
    h->released.store(false, std::memory_order_release);
    cuda::get_last_error();
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true))
      log::warn("device {}: cannot learn when a captured CUDA graph is destroyed (no graph user object): the "
                "memory it uses stays held until the process exits (logged once)", device_);
  }
  return h;
}

GraphHolds::~GraphHolds() {
  std::unordered_set<Hold*> all(holds_.begin(), holds_.end());
  for (const auto& [addr, h] : captured_) all.insert(h);
  for (Hold* h : all)
    if (!h->tied || h->released.load(std::memory_order_acquire)) delete h;  // else its graph still points at it
}

GraphHolds::Hold* GraphHolds::drop_captured(uint64_t addr) {
  auto it = captured_.find(addr);
  if (it == captured_.end()) return nullptr;
  Hold* h = it->second;
  captured_.erase(it);
  --h->live;
  if (!h->released.load(std::memory_order_acquire)) return h;
  // Destroyed already: settled, or to be settled by release_destroyed().
  if (h->live == 0 && std::find(holds_.begin(), holds_.end(), h) == holds_.end()) delete h;
  return nullptr;
}

void GraphHolds::retire(size_t i) {
  Hold* h = holds_[i];
  h->freed.clear();
  holds_[i] = holds_.back();
  holds_.pop_back();
  if (h->live == 0) delete h;  // else the last free of its live blocks deletes it
}

void GraphHolds::allocated(uint64_t addr, unsigned long long id, cudaGraph_t graph) {
  Hold* h = hold_for(id, graph);
  captured_[addr] = h;
  ++h->live;
}

void GraphHolds::freed_in_capture(uint64_t addr, unsigned long long id, cudaGraph_t graph) {
  drop_captured(addr);
  hold_for(id, graph)->freed.push_back(addr);
}

bool GraphHolds::free_held(uint64_t addr) {
  Hold* h = drop_captured(addr);
  if (!h) return false;
  h->freed.push_back(addr);
  return true;
}

size_t GraphHolds::held_blocks() const {
  size_t n = 0;
  for (const Hold* h : holds_) n += h->freed.size();
  return n;
}

}  // namespace alloc
}  // namespace gpuslack
