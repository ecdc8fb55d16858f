#include "cuda/runtime_api.h"

#include <atomic>

#include "cuda/runtime_symbols.h"

namespace gpuslack {
namespace cuda {
namespace {

// Resolves `name` once; later calls are one acquire load.
template <typename Fn>
Fn resolve(std::atomic<void*>& slot, const char* name) {
  void* p = slot.load(std::memory_order_acquire);
  if (!p) {
    p = find_runtime_symbol(name).address;
    if (p) slot.store(p, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(p);
}

std::atomic<void*> g_pointer_get_attributes{nullptr};
std::atomic<void*> g_peek_at_last_error{nullptr};
std::atomic<void*> g_get_last_error{nullptr};

}  // namespace

cudaError_t pointer_get_attributes(cudaPointerAttributes* attributes, const void* ptr) {
  auto fn = resolve<cudaError_t (*)(cudaPointerAttributes*, const void*)>(g_pointer_get_attributes,
                                                                          "cudaPointerGetAttributes");
  return fn ? fn(attributes, ptr) : cudaErrorSharedObjectInitFailed;
}

cudaError_t peek_at_last_error() {
  auto fn = resolve<cudaError_t (*)()>(g_peek_at_last_error, "cudaPeekAtLastError");
  return fn ? fn() : cudaErrorSharedObjectInitFailed;
}

cudaError_t get_last_error() {
  auto fn = resolve<cudaError_t (*)()>(g_get_last_error, "cudaGetLastError");
  return fn ? fn() : cudaErrorSharedObjectInitFailed;
}

}  // namespace cuda
}  // namespace gpuslack
