#include "cuda/driver_context.h"

#include <atomic>
#include <mutex>

#include "cuda/driver_api.h"
#include "cuda/runtime_api.h"

namespace gpuslack {
namespace cuda {
namespace {

constexpr int kMaxDevices = 64;
std::atomic<CUcontext> g_primary[kMaxDevices];
thread_local bool t_bound = false;

// The primary context of `device`, retained the first time (cold: under a
// mutex, so that two threads never retain it twice).
__attribute__((noinline, cold)) CUresult retain_primary(const DriverApi* api, int device, CUcontext* out) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if ((*out = g_primary[device].load(std::memory_order_acquire))) return CUDA_SUCCESS;
  CUdevice dev;
  if (CUresult r = api->device_get(&dev, device); r != CUDA_SUCCESS) return r;
  CUcontext c = nullptr;
  if (CUresult r = api->primary_ctx_retain(&c, dev); r != CUDA_SUCCESS) return r;
  g_primary[device].store(c, std::memory_order_release);
  *out = c;
  return CUDA_SUCCESS;
}

CUresult primary(const DriverApi* api, int device, CUcontext* out) {
  if (device < 0 || device >= kMaxDevices) return CUDA_ERROR_INVALID_DEVICE;
  if ((*out = g_primary[device].load(std::memory_order_acquire))) return CUDA_SUCCESS;
  return retain_primary(api, device, out);
}

}  // namespace

CUresult bind_runtime_context(int device) {
  const DriverApi* api = driver();
  if (!api) return CUDA_ERROR_NOT_INITIALIZED;
  CUcontext c = nullptr;
  if (CUresult r = api->ctx_get_current(&c); r != CUDA_SUCCESS) return r;
  if (c) return CUDA_SUCCESS;  // the application's, or one bound before: used as it is
  if (CUresult r = primary(api, device, &c); r != CUDA_SUCCESS) return r;
  // cuCtxSetCurrent, as the runtime binds it: the thread's stack was empty.
  CUresult r = api->ctx_set_current(c);
  if (r == CUDA_SUCCESS) t_bound = true;
  return r;
}

bool bound_by_gpuslack_on_this_thread() { return t_bound; }

CUresult bind_runtime_context() {
  int device = 0;
  if (get_device(&device) != cudaSuccess) return CUDA_ERROR_INVALID_DEVICE;
  return bind_runtime_context(device);
}

ScopedDeviceContext::ScopedDeviceContext(int device) {
  const DriverApi* api = driver();
  if (!api) {
    result_ = CUDA_ERROR_NOT_INITIALIZED;
    return;
  }
  CUcontext c = nullptr;
  if ((result_ = api->ctx_get_current(&c)) != CUDA_SUCCESS) return;
  CUdevice on = -1, want = -1;
  if (c && api->ctx_get_device(&on) == CUDA_SUCCESS && api->device_get(&want, device) == CUDA_SUCCESS && on == want)
    return;  // already there
  if ((result_ = primary(api, device, &c)) != CUDA_SUCCESS) return;
  result_ = api->ctx_push_current(c);
  pushed_ = result_ == CUDA_SUCCESS;
}

ScopedDeviceContext::~ScopedDeviceContext() {
  if (!pushed_) return;
  CUcontext popped = nullptr;
  driver()->ctx_pop_current(&popped);
}

}  // namespace cuda
}  // namespace gpuslack
