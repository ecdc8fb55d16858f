// Routes of device memory: cudaMalloc, cudaFree and the stream-ordered
// calls to the VMM allocator (alloc/vmm.h) when GPUSLACK_CONF selects
// allocator:vmm; cudaMemGetInfo counting the memory it holds unused as
// free; cudaDeviceSynchronize making frees made before it reusable;
// cudaIpcGetMemHandle refused for its memory. routes.h has the list.
#pragma once

#include <atomic>
#include <optional>

#include "alloc/vmm.h"
#include "config/options.h"
#include "cuda/fail.h"
#include "cuda/runtime_api.h"
#include "log/log.h"
#include "route.h"
#include "routes_passthrough.h"

namespace gpuslack {
namespace interpose {
namespace {

// cudaMalloc: from the VMM allocator of the current device; when it cannot
// serve (pass-through, or out of memory after trimming and waiting), from
// the runtime, whose own answer (and last-error state, and errno) the
// caller then gets (Note [Retrying a pass-through allocation]).
cudaError_t routed_malloc(void** p, size_t size) {
  MallocFn real = real_of<MallocFn>(slot_cudaMalloc);
  if (!alloc::vmm_selected() || p == nullptr || size == 0) return real(p, size);
  const CallersErrno caller;
  int device = 0;
  if (cuda::get_device(&device) != cudaSuccess) return real(p, size);
  alloc::DeviceAllocator* a = alloc::device_allocator(device);
  void* block = a ? a->allocate(size) : nullptr;
  if (!block) return passed_through_from(caller, real, p, size);
  caller.restore();
  *p = block;
  return cudaSuccess;
}

// cudaFree: a VMM block goes back to its allocator without synchronizing
// the device (free_sync keeps the synchronization); anything else (NULL, a
// native allocation, a bad pointer) to the runtime. A pointer in a
// reservation that starts no live block (freed already, or inside one) is
// refused as the runtime refuses such a pointer, last error included.
cudaError_t routed_free(void* p) {
  FreeFn real = real_of<FreeFn>(slot_cudaFree);
  alloc::DeviceAllocator* a = p ? alloc::owner(p) : nullptr;
  if (!a) return real(p);
  if (options().free_sync) cuda::device_synchronize();
  return a->free(p) ? cudaSuccess : cuda::fail(cudaErrorInvalidValue);
}

// The stream-ordered calls (alloc::ordered_stream: the per-thread default
// stream takes the stream-less path).

using MallocAsyncFn = cudaError_t (*)(void**, size_t, cudaStream_t);
using FreeAsyncFn = cudaError_t (*)(void*, cudaStream_t);

// Whether `s`, a stream an ordered call names (not the legacy or a
// per-thread default stream), is one the runtime knows: a handle it does
// not know (destroyed, or never a stream) goes to the runtime, which
// refuses it (cudaErrorInvalidResourceHandle) and records the error, as it
// would without gpuslack, where the allocator would have taken it.
bool known_stream(cudaStream_t s) {
  cudaStreamCaptureStatus status;
  return s == nullptr || cuda::stream_is_capturing(s, &status) == cudaSuccess;
}

template <bool kPtsz>
cudaError_t routed_malloc_async(void** p, size_t size, cudaStream_t s) {
  MallocAsyncFn real = real_of<MallocAsyncFn>(kPtsz ? slot_cudaMallocAsync_ptsz : slot_cudaMallocAsync);
  if (!alloc::vmm_selected() || p == nullptr || size == 0) return real(p, size, s);
  const CallersErrno caller;
  int device = 0;
  if (cuda::get_device(&device) != cudaSuccess) return real(p, size, s);
  alloc::DeviceAllocator* a = alloc::device_allocator(device);
  if (!a) return passed_through_from(caller, real, p, size, s);
  std::optional<cudaStream_t> on = alloc::ordered_stream(s, kPtsz);
  if (on && !known_stream(*on)) return real(p, size, s);
  void* block = on ? a->allocate(size, *on) : a->allocate(size);
  if (!block) return passed_through_from(caller, real, p, size, s);
  caller.restore();
  *p = block;
  return cudaSuccess;
}

template <bool kPtsz>
cudaError_t routed_free_async(void* p, cudaStream_t s) {
  FreeAsyncFn real = real_of<FreeAsyncFn>(kPtsz ? slot_cudaFreeAsync_ptsz : slot_cudaFreeAsync);
  alloc::DeviceAllocator* a = p ? alloc::owner(p) : nullptr;
  if (!a) return real(p, s);
  std::optional<cudaStream_t> on = alloc::ordered_stream(s, kPtsz);
  if (on && !known_stream(*on)) return real(p, s);
  return (on ? a->free(p, *on) : a->free(p)) ? cudaSuccess : cuda::fail(cudaErrorInvalidValue);
}

// cudaMemGetInfo: memory the allocator holds mapped with no live block in
// it is free in every sense an application cares about (an allocation gets
// it, the allocator releases it under pressure, a pass-through allocation
// gets it back: Note [Retrying a pass-through allocation]), so it counts as
// free, freed blocks whose fences are pending included (README,
// "cudaMemGetInfo"). Never waits.
cudaError_t routed_mem_get_info(size_t* free_bytes, size_t* total) {
  cudaError_t r = real_of<MemGetInfoFn>(slot_cudaMemGetInfo)(free_bytes, total);
  int device = 0;
  if (r != cudaSuccess || free_bytes == nullptr || cuda::get_device(&device) != cudaSuccess) return r;
  if (alloc::DeviceAllocator* a = alloc::existing_allocator(device)) {
    *free_bytes += a->unused_bytes();
    if (total && *free_bytes > *total) *free_bytes = *total;
  }
  return r;
}

// cudaDeviceSynchronize: frees made before it become reusable once it has
// returned (Note [Frees behind a device synchronization]).
using DeviceSynchronizeFn = cudaError_t (*)();
cudaError_t routed_device_synchronize() {
  DeviceSynchronizeFn real = real_of<DeviceSynchronizeFn>(slot_cudaDeviceSynchronize);
  if (!alloc::vmm_selected()) return real();
  int device = 0;
  alloc::DeviceAllocator* a = cuda::get_device(&device) == cudaSuccess ? alloc::existing_allocator(device) : nullptr;
  if (a) a->fence_frees();
  cudaError_t r = real();
  if (a && r == cudaSuccess) a->take_back_completed();
  return r;
}

// An IPC handle of a VMM block would name the reservation, not the block:
// no other process could open it. Refuse clearly instead (once logged).
using IpcGetFn = cudaError_t (*)(cudaIpcMemHandle_t*, void*);
cudaError_t routed_ipc_get_mem_handle(cudaIpcMemHandle_t* handle, void* p) {
  if (p && alloc::owner(p)) {
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true))
      log::warn("cudaIpcGetMemHandle on memory of gpuslack's VMM allocator is not supported; "
                "use GPUSLACK_CONF=allocator:native for programs that share device memory over IPC");
    return cuda::fail(cudaErrorInvalidValue);
  }
  return real_of<IpcGetFn>(slot_cudaIpcGetMemHandle)(handle, p);
}

GPUSLACK_ROUTE(cudaMalloc, MallocFn, routed_malloc)
GPUSLACK_ROUTE(cudaFree, FreeFn, routed_free)
GPUSLACK_ROUTE_PAIR(cudaMallocAsync, _ptsz, MallocAsyncFn, routed_malloc_async)
GPUSLACK_ROUTE_PAIR(cudaFreeAsync, _ptsz, FreeAsyncFn, routed_free_async)
GPUSLACK_ROUTE(cudaMemGetInfo, MemGetInfoFn, routed_mem_get_info)
GPUSLACK_ROUTE(cudaDeviceSynchronize, DeviceSynchronizeFn, routed_device_synchronize)
GPUSLACK_ROUTE(cudaIpcGetMemHandle, IpcGetFn, routed_ipc_get_mem_handle)

}  // namespace
}  // namespace interpose
}  // namespace gpuslack
