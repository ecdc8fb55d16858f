#include "alloc/process_allocators.h"

#include <pthread.h>

#include <atomic>
#include <mutex>
#include <new>
#include <string>

#include "config/options.h"
#include "cuda/driver_api.h"
#include "cuda/driver_context.h"
#include "cuda/runtime_api.h"
#include "log/log.h"

namespace gpuslack {
namespace alloc {
namespace {

std::atomic<DeviceAllocator*> g_allocators[kMaxDevices];
// 1 + the highest device with an allocator (0: none): owner() looks no
// further, so with the native allocator it is one load.
std::atomic<int> g_slots_used{0};
std::atomic<bool> g_refused[kMaxDevices];
std::string* g_refused_why[kMaxDevices];  // under g_make_mu; never freed
// A failure that may pass (no context could be bound) was logged once.
std::atomic<bool> g_deferred_logged[kMaxDevices];
std::mutex g_make_mu;
std::atomic<uint64_t> g_peers[kMaxDevices];
std::atomic<uint64_t> g_total[kMaxDevices];  // device memory, set when its allocator is made  // by owner: bit i = device i may access it

// Note [The allocators after a fork]: the child of a fork has one thread,
// the one that forked. Every other thread of the parent is gone, and with
// it any lock it held at the fork: an allocator's mutex, or the front-cache
// lock a thread takes for each cached pair (Note [Front caches] in
// device_allocator.h), held for most of a loop of cudaMallocAsync and
// cudaFreeAsync. Any allocation hook in the child that reached the parent's
// allocators (a free of the parent's block, cudaMemGetInfo, any miss,
// which settles every front's counts) would wait for it forever, and what
// it guarded may be half changed. So the child forgets them: this
// handler, registered when the first allocator is made, unpublishes every
// allocator (left behind, never read again), makes the make mutex anew and
// has the forking thread forget its fronts; it takes no lock and allocates
// nothing (Note [Fork] in session/session.cc says why). In the child the
// parent's blocks are no allocator's: the hooks hand them to the runtime,
// whose own answer the caller gets; a new allocation makes a new allocator
// if the driver serves the child (a real CUDA context is not usable after
// a fork: then the runtime's answer again). The pinned heap does the same
// (pin/process_heap.cc), for good: the child's pinned calls go to the
// runtime. Test: tests/interpose/fork_test.py (forks while one thread runs
// the cached pair and another the pinned heap's).
void forget_after_fork_child() {
  g_slots_used.store(0, std::memory_order_relaxed);
  for (auto& slot : g_allocators) slot.store(nullptr, std::memory_order_relaxed);
  new (&g_make_mu) std::mutex();
  DeviceAllocator::forget_thread_fronts_after_fork();
}

__attribute__((noinline, cold)) DeviceAllocator* make(int device) {
  std::lock_guard<std::mutex> lock(g_make_mu);
  if (DeviceAllocator* a = g_allocators[device].load(std::memory_order_acquire)) return a;
  static const bool forget_at_fork = pthread_atfork(nullptr, nullptr, forget_after_fork_child) == 0;
  (void)forget_at_fork;
  if (g_refused[device].load()) return nullptr;
  const cuda::DriverApi* api = cuda::driver();
  auto refuse = [&](const std::string& why) -> DeviceAllocator* {
    log::warn("device {}: the VMM allocator is off ({}); cudaMalloc/cudaFree pass through", device, why);
    g_refused_why[device] = new std::string(why);
    g_refused[device].store(true);
    return nullptr;
  };
  // What may pass (no context could be bound on this thread) leaves the
  // allocator unmade, not refused: the next allocation tries again.
  auto defer = [&](CUresult r) -> DeviceAllocator* {
    if (!g_deferred_logged[device].exchange(true))
      log::warn("device {}: the VMM allocator could not start on this thread (no CUDA context, error {}); "
                "this allocation passes through and the next one tries again",
                device, static_cast<int>(r));
    return nullptr;
  };
  if (!api) return refuse(cuda::why_no_driver());
  CUdevice dev;
  size_t total = 0;
  if (api->device_get(&dev, device) != CUDA_SUCCESS) return refuse("no such device");
  {
    // cuMemGetInfo answers for the current context's device: in that of
    // `device` (Note [gpuslack's own driver calls need a context]).
    cuda::ScopedDeviceContext in_device(device);
    if (in_device.result() != CUDA_SUCCESS) return defer(in_device.result());
    size_t free_bytes = 0;
    CUresult r = api->mem_get_info(&free_bytes, &total);
    if (r == CUDA_ERROR_INVALID_CONTEXT) return defer(r);
    if (r != CUDA_SUCCESS || total == 0) return refuse("cuMemGetInfo failed with error " + std::to_string(static_cast<int>(r)));
  }
  uint64_t cache_limit = static_cast<uint64_t>(options().cache_limit_mb) << 20;
  uint64_t map_chunk = static_cast<uint64_t>(options().map_chunk_mb > 0 ? options().map_chunk_mb : 0) << 20;
  auto* a = new DeviceAllocator(api, device, total + total / 8, cache_limit, map_chunk);
  if (!a->ok()) {
    std::string why = a->why();
    delete a;
    return refuse(why);
  }
  g_total[device].store(total);
  uint64_t peers = g_peers[device].load();
  for (int d = 0; d < kMaxDevices; ++d)
    if (peers & (1ull << d)) a->grant_peer(d);
  if (g_slots_used.load() <= device) g_slots_used.store(device + 1, std::memory_order_release);
  g_allocators[device].store(a, std::memory_order_release);
  log::info("device {}: VMM allocator over {} bytes of address space", device, total + total / 8);
  return a;
}

}  // namespace

bool vmm_selected() {
  static const bool selected = options().allocator == "vmm";
  return selected;
}

DeviceAllocator* device_allocator(int device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  DeviceAllocator* a = g_allocators[device].load(std::memory_order_acquire);
  if (a) return a;
  if (g_refused[device].load(std::memory_order_acquire)) return nullptr;  // said once, in make()
  return make(device);
}

std::vector<Refusal> refusals() {
  std::lock_guard<std::mutex> lock(g_make_mu);
  std::vector<Refusal> out;
  for (int d = 0; d < kMaxDevices; ++d)
    if (g_refused_why[d]) out.push_back({d, *g_refused_why[d]});
  return out;
}

DeviceMemory current_device_memory() {
  DeviceMemory m;
  int device = 0;
  if (!vmm_selected() || cuda::get_device(&device) != cudaSuccess) {
    m.untouched = true;
    return m;
  }
  // The runtime's own call would have bound the device's primary context
  // on a thread with none; gpuslack, serving the call, binds it too (Note
  // [gpuslack's own driver calls need a context]). If it cannot, the
  // runtime's call (through the retry) does what it does.
  // Without a driver table (no libcuda.so.1 with the VMM calls) no context
  // can be bound and none is needed: the allocator is off, said once
  // (Note [Saying the allocator is off]), and the call passes through.
  if (!cuda::driver()) {
    m.resource = device_allocator(device);
    return m;
  }
  if (cuda::bind_runtime_context(device) != CUDA_SUCCESS) return m;
  m.resource = device_allocator(device);
  return m;
}

DeviceAllocator* existing_allocator(int device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  return g_allocators[device].load(std::memory_order_acquire);
}

std::optional<cudaStream_t> ordered_stream(cudaStream_t s, bool per_thread_default) {
  if (s == cudaStreamPerThread || (s == nullptr && per_thread_default)) return std::nullopt;
  if (s == cudaStreamLegacy) return nullptr;
  return s;
}

bool set_memory_fraction(int device, double fraction) {
  if (!(fraction > 0 && fraction <= 1)) return false;
  DeviceAllocator* a = device_allocator(device);
  if (!a) return false;
  a->set_limit(static_cast<uint64_t>(fraction * static_cast<double>(g_total[device].load())));
  return true;
}

void peer_access_enabled(int accessor, int owner) {
  if (accessor < 0 || accessor >= kMaxDevices || owner < 0 || owner >= kMaxDevices) return;
  // Under the make mutex: an allocator being made now sees the bit.
  std::lock_guard<std::mutex> lock(g_make_mu);
  g_peers[owner].fetch_or(1ull << accessor);
  if (DeviceAllocator* a = g_allocators[owner].load(std::memory_order_acquire)) a->grant_peer(accessor);
}

void forget_stream(cudaStream_t stream) {
  for (auto& slot : g_allocators)
    if (DeviceAllocator* a = slot.load(std::memory_order_acquire)) a->forget_stream(stream);
}

uint64_t trim_all() {
  uint64_t released = 0;
  for (auto& slot : g_allocators)
    if (DeviceAllocator* a = slot.load(std::memory_order_acquire)) released += a->trim();
  return released;
}

DeviceAllocator* owner(const void* p) {
  int n = g_slots_used.load(std::memory_order_acquire);
  for (int d = 0; d < n; ++d) {
    DeviceAllocator* a = g_allocators[d].load(std::memory_order_acquire);
    if (a && a->owns(p)) return a;
  }
  return nullptr;
}

VmmRange vmm_range(const void* p, size_t bytes) {
  DeviceAllocator* a = owner(p);
  if (!a) return VmmRange::kNotVmm;
  return a->holds_range(p, bytes) ? VmmRange::kInside : VmmRange::kOutside;
}

}  // namespace alloc
}  // namespace gpuslack
