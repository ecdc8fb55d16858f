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
std::atomic<void*> g_get_device{nullptr};
std::atomic<void*> g_set_device{nullptr};
std::atomic<void*> g_event_create{nullptr};
std::atomic<void*> g_event_record{nullptr};
std::atomic<void*> g_event_query{nullptr};
std::atomic<void*> g_event_elapsed{nullptr};
std::atomic<void*> g_stream_is_capturing{nullptr};

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

cudaError_t get_device(int* device) {
  auto fn = resolve<cudaError_t (*)(int*)>(g_get_device, "cudaGetDevice");
  return fn ? fn(device) : cudaErrorSharedObjectInitFailed;
}

cudaError_t set_device(int device) {
  auto fn = resolve<cudaError_t (*)(int)>(g_set_device, "cudaSetDevice");
  return fn ? fn(device) : cudaErrorSharedObjectInitFailed;
}

cudaError_t event_create(cudaEvent_t* event) {
  auto fn = resolve<cudaError_t (*)(cudaEvent_t*, unsigned)>(g_event_create, "cudaEventCreateWithFlags");
  return fn ? fn(event, cudaEventDefault) : cudaErrorSharedObjectInitFailed;
}

cudaError_t event_record(cudaEvent_t event, cudaStream_t stream) {
  auto fn = resolve<cudaError_t (*)(cudaEvent_t, cudaStream_t)>(g_event_record, "cudaEventRecord");
  return fn ? fn(event, stream) : cudaErrorSharedObjectInitFailed;
}

cudaError_t event_query(cudaEvent_t event) {
  auto fn = resolve<cudaError_t (*)(cudaEvent_t)>(g_event_query, "cudaEventQuery");
  return fn ? fn(event) : cudaErrorSharedObjectInitFailed;
}

cudaError_t event_elapsed_ms(float* ms, cudaEvent_t start, cudaEvent_t end) {
  auto fn = resolve<cudaError_t (*)(float*, cudaEvent_t, cudaEvent_t)>(g_event_elapsed, "cudaEventElapsedTime");
  return fn ? fn(ms, start, end) : cudaErrorSharedObjectInitFailed;
}

cudaError_t stream_is_capturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  auto fn = resolve<cudaError_t (*)(cudaStream_t, cudaStreamCaptureStatus*)>(g_stream_is_capturing,
                                                                            "cudaStreamIsCapturing");
  return fn ? fn(stream, status) : cudaErrorSharedObjectInitFailed;
}

}  // namespace cuda
}  // namespace gpuslack
