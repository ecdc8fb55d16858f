#include "replay/replay_gpu.h"

namespace gpuslack {
namespace bench {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ReplayGpu::~ReplayGpu() {
  if (held_) let_go();
  for (auto& [id, s] : created_) cudaStreamDestroy(s);
}

std::optional<cudaStream_t> ReplayGpu::stream(uint64_t id) {
  if (id == 0) return cudaStream_t{nullptr};
  auto it = created_.find(id);
  if (it != created_.end()) return it->second;
  cudaStream_t s = nullptr;
  // Blocking: held by the legacy stream's hold (Note [The replay's GPU]).
  if (cudaStreamCreate(&s) != cudaSuccess) return std::nullopt;
  created_.emplace(id, s);
  return s;
}

void CUDART_CB ReplayGpu::hold_function(void* arg) {
  auto* self = static_cast<ReplayGpu*>(arg);
  std::unique_lock<std::mutex> lock(self->mu_);
  while (!self->open_) {
    int64_t started = self->call_started_ns_.load();
    if (started != 0 && now_ns() - started >= std::chrono::nanoseconds(kCallBound).count()) {
      // An allocator call waits for the GPU: it finishes by itself.
      self->timeouts_.fetch_add(1);
      return;
    }
    self->cv_.wait_for(lock, kTick);
  }
}

bool ReplayGpu::hold() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  if (cudaLaunchHostFunc(cudaStreamLegacy, hold_function, this) != cudaSuccess) {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    return false;
  }
  held_ = true;
  return true;
}

void ReplayGpu::let_go() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
  }
  cv_.notify_all();
  // Every stream drained, the hold's function returned: a new hold may
  // reuse the state.
  cudaDeviceSynchronize();
  ++device_syncs_;
  held_ = false;
}

bool ReplayGpu::settle() {
  let_go();
  return hold();
}

void ReplayGpu::call_begins() { call_started_ns_.store(now_ns()); }

void ReplayGpu::call_ends() { call_started_ns_.store(0); }

}  // namespace bench
}  // namespace gpuslack
