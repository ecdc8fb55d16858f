// The CUDA context gpuslack's own driver calls run in (cuda/driver_api.h).
//
// Note [gpuslack's own driver calls need a context]: on a real GPU a thread
// has no current context until one is bound: the runtime binds the primary
// context of the thread's device at its first call that needs one ("If no
// CUcontext is current to the calling thread when a CUDA Runtime API call
// which requires an active context is made, then the primary context for a
// device will be selected, made current to the calling thread, and
// initialized": CUDA Runtime API, "Interactions with the CUDA Driver API"),
// and on cudaSetDevice. A driver call that acts on the current context
// (cuMemGetInfo, cuMemGetAddressRange, ...) fails without one with
// CUDA_ERROR_INVALID_CONTEXT; the VMM calls (cuMemCreate, cuMemMap,
// cuMemSetAccess, cuMemAddressReserve, ...) name their device and need none.
// When gpuslack serves a runtime call itself (cudaMalloc under
// allocator:vmm, a staged cudaMemcpy), the runtime never sees it, so on a
// thread whose first CUDA call that is, gpuslack must bind the context the
// runtime would have bound. Two tools, for two situations:
//
//   - bind_runtime_context(device): gpuslack stands in for a runtime call
//     on `device` (the thread's runtime device). If the thread has no
//     current context, the device's primary context is made current and
//     LEFT current, exactly as the runtime's own call would have left it,
//     so the application's later calls (runtime or driver) behave as
//     without gpuslack. A context the application made current is never
//     replaced (the runtime would have used it too). Costs one
//     cuCtxGetCurrent when a context is current.
//   - ScopedDeviceContext(device): a driver call that must answer for
//     `device` whatever the thread is doing (cuMemGetInfo when an
//     allocator is made). If the current context is on `device`, nothing
//     happens; otherwise the device's primary context is pushed for the
//     scope and popped at its end: the thread is left as it was found.
//
// A driver API hook (issue 18) must use neither on a thread without a
// context: the driver itself would return CUDA_ERROR_INVALID_CONTEXT there,
// and so must gpuslack.
//
// gpuslack retains each device's primary context once, on first use, and
// never releases it (as the runtime does).
//
// Thread safety: any thread; the context is per thread. Binding the first
// time per device takes a mutex (cold); afterwards no lock.
#pragma once

#include <cuda.h>

namespace gpuslack {
namespace cuda {

// See the Note. CUDA_SUCCESS, or why no context could be bound (no driver:
// CUDA_ERROR_NOT_INITIALIZED; the driver's error otherwise).
CUresult bind_runtime_context(int device);
// The same for the thread's runtime device (cudaGetDevice).
CUresult bind_runtime_context();

// True when bind_runtime_context() made the calling thread's current context
// (so the runtime, finding a context current, may never have made one).
bool bound_by_gpuslack_on_this_thread();

class ScopedDeviceContext {
 public:
  explicit ScopedDeviceContext(int device);
  ~ScopedDeviceContext();
  ScopedDeviceContext(const ScopedDeviceContext&) = delete;
  ScopedDeviceContext& operator=(const ScopedDeviceContext&) = delete;

  // CUDA_SUCCESS when a context of the device is current in the scope.
  CUresult result() const { return result_; }

 private:
  CUresult result_;
  bool pushed_ = false;
};

}  // namespace cuda
}  // namespace gpuslack
