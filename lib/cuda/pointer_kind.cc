#include "cuda/pointer_kind.h"

#include <atomic>
#include <cstdint>

#include "cuda/driver_api.h"
#include "cuda/driver_context.h"
#include "cuda/runtime_api.h"

namespace gpuslack {
namespace cuda {
namespace {

std::atomic<uint32_t> g_generation{1};

struct Entry {
  const void* ptr = nullptr;
  uint32_t generation = 0;
  PointerKind kind = PointerKind::kUnknown;
  uintptr_t base = 0;  // the allocation holding ptr; size 0: not looked up
  size_t size = 0;
};
constexpr int kEntries = 64;  // direct-mapped
thread_local Entry t_cache[kEntries];

int slot_of(const void* p) {
  auto v = reinterpret_cast<uintptr_t>(p);
  return static_cast<int>((v >> 4) ^ (v >> 12) ^ (v >> 20)) & (kEntries - 1);
}

__attribute__((noinline)) PointerKind look_up(const void* ptr) {
  if (peek_at_last_error() != cudaSuccess) return PointerKind::kUnknown;
  cudaPointerAttributes a{};
  if (pointer_get_attributes(&a, ptr) != cudaSuccess) {
    get_last_error();  // was clear before our call: leave it clear
    return PointerKind::kUnknown;
  }
  switch (a.type) {
    case cudaMemoryTypeDevice: return PointerKind::kDevice;
    case cudaMemoryTypeManaged: return PointerKind::kManaged;
    case cudaMemoryTypeHost: return PointerKind::kPinnedHost;
    case cudaMemoryTypeUnregistered: return PointerKind::kPageableHost;
  }
  return PointerKind::kUnknown;
}

}  // namespace

PointerKind pointer_kind(const void* ptr) {
  if (ptr == nullptr) return PointerKind::kUnknown;
  uint32_t gen = g_generation.load(std::memory_order_acquire);
  Entry& e = t_cache[slot_of(ptr)];
  if (e.ptr == ptr && e.generation == gen) return e.kind;
  PointerKind k = look_up(ptr);
  if (k != PointerKind::kUnknown) e = Entry{ptr, gen, k};
  return k;
}

void invalidate_pointer_kinds() { g_generation.fetch_add(1, std::memory_order_acq_rel); }

bool within_allocation(const void* ptr, size_t bytes) {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  uint32_t gen = g_generation.load(std::memory_order_acquire);
  Entry& e = t_cache[slot_of(ptr)];
  const bool cached = e.ptr == ptr && e.generation == gen;  // the kind's entry, from the copy's classification
  uintptr_t base = 0;
  size_t size = 0;
  if (cached && e.size) {
    base = e.base;
    size = e.size;
  } else {
    const DriverApi* api = driver();
    CUdeviceptr b = 0;
    if (!api) return false;
    CUresult r = api->mem_get_address_range(&b, &size, static_cast<CUdeviceptr>(p));
    // A copy gpuslack serves stands in for the runtime's, which would have
    // bound a context on a thread with none (Note [gpuslack's own driver
    // calls need a context] in cuda/driver_context.h).
    if (r == CUDA_ERROR_INVALID_CONTEXT && bind_runtime_context() == CUDA_SUCCESS)
      r = api->mem_get_address_range(&b, &size, static_cast<CUdeviceptr>(p));
    if (r != CUDA_SUCCESS || size == 0) return false;
    base = static_cast<uintptr_t>(b);
    if (cached) {
      e.base = base;
      e.size = size;
    }
  }
  return p >= base && p - base <= size && bytes <= size - (p - base);
}

}  // namespace cuda
}  // namespace gpuslack
