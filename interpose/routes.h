// Routes: the hooks that do more than forward.
//
// The generator (hooks.cc) calls route<id>(real) args: by default that is
// the real function itself; a specialization below returns a function of
// the same signature that takes the call somewhere else first. Timing,
// NVTX and the ledger wrap routed calls exactly as forwarded ones, so the
// summary shows what the application waited for either way.
//
//   cudaMalloc / cudaFree,
//   cudaMallocAsync / cudaFreeAsync
//                                -> the VMM allocator (alloc/vmm.h) when
//                                   GPUSLACK_CONF selects allocator:vmm
//   cudaMallocHost, cudaHostAlloc,
//   cudaFreeHost                 -> the pinned heap (pin/pinned_heap.h) when
//                                   GPUSLACK_CONF's pin is on
//   cudaMemGetInfo               -> adds the allocator's cached bytes to
//                                   "free" (README, "cudaMemGetInfo")
//   cudaDeviceEnablePeerAccess   -> grants the peer the allocator's memory
//   cudaStreamBeginCapture,
//   cudaStreamEndCapture         -> the allocator's capture state (Note
//                                   [Frees during capture])
//   cudaIpcGetMemHandle          -> refused, with one log line, for VMM
//                                   memory (its handle would not open)
//   cudaStreamCreateWithFlags,
//   cudaStreamCreateWithPriority,
//   cudaStreamDestroy            -> the stream registry the allocator fences
//                                   frees against (alloc/stream_registry.h)
//   cudaMemcpy, cudaMemcpyAsync,
//   cudaMemcpy2D, cudaMemcpy2DAsync
//                                -> the staged copies (pin/staged_copy.h):
//                                   pageable memory through pinned staging
//   cudaMemcpyBatchAsync,
//   cudaLaunchHostFunc,
//   cudaStreamAddCallback,
//   cudaGraphLaunch,
//   cudaStreamWaitEvent          -> host-visible work the staged copies
//                                   must wait for (pin/host_work.h)
//
// The copy routes are not plain forwarding (Note [What a hook may never
// do] in hooks.cc): a pageable copy takes the stager's locks and records
// events, and a device->host copy into pinned memory, a host function, a
// graph launch (and a cross-stream wait while such work is pending) record
// one event each, under the host-work table's lock (pin/host_work.h).
//
// Included by hooks.cc only, after the tables are expanded (it names their
// ids and slots).
#pragma once

#include <optional>

#include "alloc/stream_registry.h"
#include "alloc/vmm.h"
#include "config/options.h"
#include "cuda/runtime_api.h"
#include "log/log.h"
#include "pin/host_work.h"
#include "pin/process_heap.h"
#include "pin/staged_copy.h"

namespace gpuslack {
namespace interpose {
namespace {

template <uint16_t Id>
struct Route {
  template <typename Fn>
  static Fn get(Fn real) {
    return real;
  }
};
template <uint16_t Id, typename Fn>
Fn route(Fn real) {
  return Route<Id>::get(real);
}

template <typename Fn>
Fn real_of(Slot& slot) {
  return reinterpret_cast<Fn>(real_address(slot));
}

using MallocFn = cudaError_t (*)(void**, size_t);
using FreeFn = cudaError_t (*)(void*);

// cudaMalloc: from the VMM allocator of the current device; when it cannot
// serve (pass-through, or out of memory after trimming and waiting), from
// the runtime, whose own answer (and last-error state) the caller then gets.
cudaError_t routed_malloc(void** p, size_t size) {
  MallocFn real = real_of<MallocFn>(slot_cudaMalloc);
  if (!alloc::vmm_selected() || p == nullptr || size == 0) return real(p, size);
  int device = 0;
  if (cuda::get_device(&device) != cudaSuccess) return real(p, size);
  alloc::DeviceAllocator* a = alloc::device_allocator(device);
  void* block = a ? a->allocate(size) : nullptr;
  if (!block) return real(p, size);
  *p = block;
  return cudaSuccess;
}

// cudaFree: a VMM block goes back to its allocator without synchronizing
// the device (free_sync keeps the synchronization); anything else (NULL, a
// native allocation, a bad pointer) to the runtime.
cudaError_t routed_free(void* p) {
  FreeFn real = real_of<FreeFn>(slot_cudaFree);
  alloc::DeviceAllocator* a = p ? alloc::owner(p) : nullptr;
  if (!a) return real(p);
  if (options().free_sync) cuda::device_synchronize();
  return a->free(p) ? cudaSuccess : cudaErrorInvalidValue;
}

// The stream-ordered calls (alloc::ordered_stream: the per-thread default
// stream takes the stream-less path).

using MallocAsyncFn = cudaError_t (*)(void**, size_t, cudaStream_t);
using FreeAsyncFn = cudaError_t (*)(void*, cudaStream_t);

template <bool kPtsz>
cudaError_t routed_malloc_async(void** p, size_t size, cudaStream_t s) {
  MallocAsyncFn real = real_of<MallocAsyncFn>(kPtsz ? slot_cudaMallocAsync_ptsz : slot_cudaMallocAsync);
  if (!alloc::vmm_selected() || p == nullptr || size == 0) return real(p, size, s);
  int device = 0;
  if (cuda::get_device(&device) != cudaSuccess) return real(p, size, s);
  alloc::DeviceAllocator* a = alloc::device_allocator(device);
  if (!a) return real(p, size, s);
  std::optional<cudaStream_t> on = alloc::ordered_stream(s, kPtsz);
  void* block = on ? a->allocate(size, *on) : a->allocate(size);
  if (!block) return real(p, size, s);
  *p = block;
  return cudaSuccess;
}

template <bool kPtsz>
cudaError_t routed_free_async(void* p, cudaStream_t s) {
  FreeAsyncFn real = real_of<FreeAsyncFn>(kPtsz ? slot_cudaFreeAsync_ptsz : slot_cudaFreeAsync);
  alloc::DeviceAllocator* a = p ? alloc::owner(p) : nullptr;
  if (!a) return real(p, s);
  std::optional<cudaStream_t> on = alloc::ordered_stream(s, kPtsz);
  return (on ? a->free(p, *on) : a->free(p)) ? cudaSuccess : cudaErrorInvalidValue;
}

template <>
struct Route<kId_cudaMallocAsync> {
  static MallocAsyncFn get(MallocAsyncFn) { return &routed_malloc_async<false>; }
};
template <>
struct Route<kId_cudaMallocAsync_ptsz> {
  static MallocAsyncFn get(MallocAsyncFn) { return &routed_malloc_async<true>; }
};
template <>
struct Route<kId_cudaFreeAsync> {
  static FreeAsyncFn get(FreeAsyncFn) { return &routed_free_async<false>; }
};
template <>
struct Route<kId_cudaFreeAsync_ptsz> {
  static FreeAsyncFn get(FreeAsyncFn) { return &routed_free_async<true>; }
};

// cudaMallocHost / cudaHostAlloc: from the pinned heap; when it cannot
// serve (flags it does not take, the cap, a failing runtime, a capture),
// from the runtime, whose own answer the caller then gets.
using HostAllocFn = cudaError_t (*)(void**, size_t, unsigned int);
cudaError_t routed_malloc_host(void** p, size_t size) {
  MallocFn real = real_of<MallocFn>(slot_cudaMallocHost);
  pin::PinnedHeap* heap = p && size ? pin::pinned_heap() : nullptr;
  void* block = heap ? heap->allocate(size, cudaHostAllocDefault) : nullptr;
  if (!block) return real(p, size);
  *p = block;
  return cudaSuccess;
}
cudaError_t routed_host_alloc(void** p, size_t size, unsigned int flags) {
  HostAllocFn real = real_of<HostAllocFn>(slot_cudaHostAlloc);
  pin::PinnedHeap* heap = p && size ? pin::pinned_heap() : nullptr;
  void* block = heap ? heap->allocate(size, flags) : nullptr;
  if (!block) return real(p, size, flags);
  *p = block;
  return cudaSuccess;
}
// cudaFreeHost: a heap block goes back without synchronizing the device;
// anything else (NULL, the runtime's own pinned memory, a bad pointer) to
// the runtime.
cudaError_t routed_free_host(void* p) {
  FreeFn real = real_of<FreeFn>(slot_cudaFreeHost);
  pin::PinnedHeap* heap = p ? pin::existing_pinned_heap() : nullptr;
  if (!heap || !heap->owns(p)) return real(p);
  return heap->free(p) ? cudaSuccess : cudaErrorInvalidValue;
}
template <>
struct Route<kId_cudaMallocHost> {
  static MallocFn get(MallocFn) { return &routed_malloc_host; }
};
template <>
struct Route<kId_cudaHostAlloc> {
  static HostAllocFn get(HostAllocFn) { return &routed_host_alloc; }
};
template <>
struct Route<kId_cudaFreeHost> {
  static FreeFn get(FreeFn) { return &routed_free_host; }
};

// cudaMemGetInfo: memory the allocator holds mapped but unused is free in
// every sense an application cares about (the next allocation gets it, and
// the allocator releases it under pressure), so it counts as free.
using MemGetInfoFn = cudaError_t (*)(size_t*, size_t*);
cudaError_t routed_mem_get_info(size_t* free_bytes, size_t* total) {
  cudaError_t r = real_of<MemGetInfoFn>(slot_cudaMemGetInfo)(free_bytes, total);
  int device = 0;
  if (r != cudaSuccess || free_bytes == nullptr || cuda::get_device(&device) != cudaSuccess) return r;
  if (alloc::DeviceAllocator* a = alloc::existing_allocator(device)) *free_bytes += a->cached_bytes();
  return r;
}
template <>
struct Route<kId_cudaMemGetInfo> {
  static MemGetInfoFn get(MemGetInfoFn) { return &routed_mem_get_info; }
};

// Peer access to VMM memory is granted per mapping (cuMemSetAccess), not
// by cudaDeviceEnablePeerAccess: the allocator grants it, now and later.
using EnablePeerFn = cudaError_t (*)(int, unsigned int);
cudaError_t routed_enable_peer_access(int peer, unsigned int flags) {
  cudaError_t r = real_of<EnablePeerFn>(slot_cudaDeviceEnablePeerAccess)(peer, flags);
  int device = 0;
  if ((r == cudaSuccess || r == cudaErrorPeerAccessAlreadyEnabled) && cuda::get_device(&device) == cudaSuccess)
    alloc::peer_access_enabled(device, peer);
  return r;
}
template <>
struct Route<kId_cudaDeviceEnablePeerAccess> {
  static EnablePeerFn get(EnablePeerFn) { return &routed_enable_peer_access; }
};

// Graph capture: the allocator stops querying events, synchronizing and
// mapping from just before the capture begins until it has ended (an
// invalidated capture ends too: cudaStreamEndCapture's result does not
// matter).
using BeginCaptureFn = cudaError_t (*)(cudaStream_t, cudaStreamCaptureMode);
using EndCaptureFn = cudaError_t (*)(cudaStream_t, cudaGraph_t*);
template <bool kPtsz>
cudaError_t routed_begin_capture(cudaStream_t s, cudaStreamCaptureMode mode) {
  alloc::capture_began(s);
  cudaError_t r = real_of<BeginCaptureFn>(kPtsz ? slot_cudaStreamBeginCapture_ptsz : slot_cudaStreamBeginCapture)(s, mode);
  if (r != cudaSuccess) alloc::capture_ended(s);
  return r;
}
template <bool kPtsz>
cudaError_t routed_end_capture(cudaStream_t s, cudaGraph_t* graph) {
  cudaError_t r = real_of<EndCaptureFn>(kPtsz ? slot_cudaStreamEndCapture_ptsz : slot_cudaStreamEndCapture)(s, graph);
  alloc::capture_ended(s);
  return r;
}
template <>
struct Route<kId_cudaStreamBeginCapture> {
  static BeginCaptureFn get(BeginCaptureFn) { return &routed_begin_capture<false>; }
};
template <>
struct Route<kId_cudaStreamBeginCapture_ptsz> {
  static BeginCaptureFn get(BeginCaptureFn) { return &routed_begin_capture<true>; }
};
template <>
struct Route<kId_cudaStreamEndCapture> {
  static EndCaptureFn get(EndCaptureFn) { return &routed_end_capture<false>; }
};
template <>
struct Route<kId_cudaStreamEndCapture_ptsz> {
  static EndCaptureFn get(EndCaptureFn) { return &routed_end_capture<true>; }
};

template <>
struct Route<kId_cudaMalloc> {
  static MallocFn get(MallocFn) { return &routed_malloc; }
};
template <>
struct Route<kId_cudaFree> {
  static FreeFn get(FreeFn) { return &routed_free; }
};

// An IPC handle of a VMM block would name the reservation, not the block:
// no other process could open it. Refuse clearly instead (once logged).
using IpcGetFn = cudaError_t (*)(cudaIpcMemHandle_t*, void*);
cudaError_t routed_ipc_get_mem_handle(cudaIpcMemHandle_t* handle, void* p) {
  if (p && alloc::owner(p)) {
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true))
      log::warn("cudaIpcGetMemHandle on memory of gpuslack's VMM allocator is not supported; "
                "use GPUSLACK_CONF=allocator:native for programs that share device memory over IPC");
    return cudaErrorInvalidValue;
  }
  return real_of<IpcGetFn>(slot_cudaIpcGetMemHandle)(handle, p);
}
template <>
struct Route<kId_cudaIpcGetMemHandle> {
  static IpcGetFn get(IpcGetFn) { return &routed_ipc_get_mem_handle; }
};

// Non-blocking streams join the registry; blocking ones are covered by
// the legacy default stream (Note [Fence streams]).
void register_stream(cudaError_t result, cudaStream_t* s, unsigned int flags) {
  if (result != cudaSuccess || s == nullptr) return;
  int device = 0;
  if (cuda::get_device(&device) == cudaSuccess) alloc::stream_created(*s, device, flags);
}

using CreateWithFlagsFn = cudaError_t (*)(cudaStream_t*, unsigned int);
using CreateWithPriorityFn = cudaError_t (*)(cudaStream_t*, unsigned int, int);
using DestroyFn = cudaError_t (*)(cudaStream_t);

cudaError_t routed_create_with_flags(cudaStream_t* s, unsigned int flags) {
  cudaError_t r = real_of<CreateWithFlagsFn>(slot_cudaStreamCreateWithFlags)(s, flags);
  register_stream(r, s, flags);
  return r;
}
cudaError_t routed_create_with_priority(cudaStream_t* s, unsigned int flags, int priority) {
  cudaError_t r = real_of<CreateWithPriorityFn>(slot_cudaStreamCreateWithPriority)(s, flags, priority);
  register_stream(r, s, flags);
  return r;
}
cudaError_t routed_destroy(cudaStream_t s) {
  alloc::stream_destroying(s);
  alloc::forget_stream(s);
  pin::host_work_stream_destroyed(s);
  return real_of<DestroyFn>(slot_cudaStreamDestroy)(s);
}

template <>
struct Route<kId_cudaStreamCreateWithFlags> {
  static CreateWithFlagsFn get(CreateWithFlagsFn) { return &routed_create_with_flags; }
};
template <>
struct Route<kId_cudaStreamCreateWithPriority> {
  static CreateWithPriorityFn get(CreateWithPriorityFn) { return &routed_create_with_priority; }
};
template <>
struct Route<kId_cudaStreamDestroy> {
  static DestroyFn get(DestroyFn) { return &routed_destroy; }
};

// ---- staged copies (pin/staged_copy.h) ----

using MemcpyFn = cudaError_t (*)(void*, const void*, size_t, cudaMemcpyKind);
using MemcpyAsyncFn = cudaError_t (*)(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);
using Memcpy2DFn = cudaError_t (*)(void*, size_t, const void*, size_t, size_t, size_t, cudaMemcpyKind);
using Memcpy2DAsyncFn = cudaError_t (*)(void*, size_t, const void*, size_t, size_t, size_t, cudaMemcpyKind,
                                        cudaStream_t);

// The runtime's own call for a CopyCall, per signature.
cudaError_t native_memcpy(const pin::CopyCall& c, void* real) {
  return reinterpret_cast<MemcpyFn>(real)(c.dst, c.src, c.width, c.kind);
}
cudaError_t native_memcpy_async(const pin::CopyCall& c, void* real) {
  return reinterpret_cast<MemcpyAsyncFn>(real)(c.dst, c.src, c.width, c.kind, c.stream);
}
cudaError_t native_memcpy_2d(const pin::CopyCall& c, void* real) {
  return reinterpret_cast<Memcpy2DFn>(real)(c.dst, c.dpitch, c.src, c.spitch, c.width, c.height, c.kind);
}
cudaError_t native_memcpy_2d_async(const pin::CopyCall& c, void* real) {
  return reinterpret_cast<Memcpy2DAsyncFn>(real)(c.dst, c.dpitch, c.src, c.spitch, c.width, c.height, c.kind,
                                                 c.stream);
}

pin::CopyCall copy_call(void* dst, const void* src, size_t width, size_t height, cudaMemcpyKind kind,
                        cudaStream_t s, bool per_thread, bool sync_api, const ApiCall& api) {
  pin::CopyCall c;
  c.dst = dst;
  c.src = src;
  c.width = width;
  c.height = height;
  c.kind = kind;
  c.stream = s;
  c.per_thread_default = per_thread;
  c.sync_api = sync_api;
  c.api = &api;
  return c;
}

template <bool kPtds>
cudaError_t routed_memcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  pin::CopyCall c = copy_call(dst, src, n, 1, kind, nullptr, kPtds, true,
                              kPtds ? kCall_cudaMemcpy_ptds : kCall_cudaMemcpy);
  return pin::stager().copy(c, &native_memcpy, real_address(kPtds ? slot_cudaMemcpy_ptds : slot_cudaMemcpy));
}
template <bool kPtsz>
cudaError_t routed_memcpy_async(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  pin::CopyCall c = copy_call(dst, src, n, 1, kind, s, kPtsz, false,
                              kPtsz ? kCall_cudaMemcpyAsync_ptsz : kCall_cudaMemcpyAsync);
  return pin::stager().copy(c, &native_memcpy_async,
                            real_address(kPtsz ? slot_cudaMemcpyAsync_ptsz : slot_cudaMemcpyAsync));
}
template <bool kPtds>
cudaError_t routed_memcpy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h,
                             cudaMemcpyKind kind) {
  pin::CopyCall c = copy_call(dst, src, w, h, kind, nullptr, kPtds, true,
                              kPtds ? kCall_cudaMemcpy2D_ptds : kCall_cudaMemcpy2D);
  c.dpitch = dpitch;
  c.spitch = spitch;
  return pin::stager().copy(c, &native_memcpy_2d, real_address(kPtds ? slot_cudaMemcpy2D_ptds : slot_cudaMemcpy2D));
}
template <bool kPtsz>
cudaError_t routed_memcpy_2d_async(void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h,
                                   cudaMemcpyKind kind, cudaStream_t s) {
  pin::CopyCall c = copy_call(dst, src, w, h, kind, s, kPtsz, false,
                              kPtsz ? kCall_cudaMemcpy2DAsync_ptsz : kCall_cudaMemcpy2DAsync);
  c.dpitch = dpitch;
  c.spitch = spitch;
  return pin::stager().copy(c, &native_memcpy_2d_async,
                            real_address(kPtsz ? slot_cudaMemcpy2DAsync_ptsz : slot_cudaMemcpy2DAsync));
}

template <>
struct Route<kId_cudaMemcpy> {
  static MemcpyFn get(MemcpyFn) { return &routed_memcpy<false>; }
};
template <>
struct Route<kId_cudaMemcpy_ptds> {
  static MemcpyFn get(MemcpyFn) { return &routed_memcpy<true>; }
};
template <>
struct Route<kId_cudaMemcpyAsync> {
  static MemcpyAsyncFn get(MemcpyAsyncFn) { return &routed_memcpy_async<false>; }
};
template <>
struct Route<kId_cudaMemcpyAsync_ptsz> {
  static MemcpyAsyncFn get(MemcpyAsyncFn) { return &routed_memcpy_async<true>; }
};
template <>
struct Route<kId_cudaMemcpy2D> {
  static Memcpy2DFn get(Memcpy2DFn) { return &routed_memcpy_2d<false>; }
};
template <>
struct Route<kId_cudaMemcpy2D_ptds> {
  static Memcpy2DFn get(Memcpy2DFn) { return &routed_memcpy_2d<true>; }
};
template <>
struct Route<kId_cudaMemcpy2DAsync> {
  static Memcpy2DAsyncFn get(Memcpy2DAsyncFn) { return &routed_memcpy_2d_async<false>; }
};
template <>
struct Route<kId_cudaMemcpy2DAsync_ptsz> {
  static Memcpy2DAsyncFn get(Memcpy2DAsyncFn) { return &routed_memcpy_2d_async<true>; }
};

// Calls that enqueue work whose effect the host can see: after they
// succeed, the staged copies learn of it (Note [The drain a staged copy
// keeps], pin/host_work.h). A batch may hold device->host copies; a graph
// may hold copies and host nodes: both count, cautiously.
using BatchFn = cudaError_t (*) GPUSLACK_P_BATCH;
using HostFuncFn = cudaError_t (*)(cudaStream_t, cudaHostFn_t, void*);
using CallbackFn = cudaError_t (*)(cudaStream_t, cudaStreamCallback_t, void*, unsigned int);
using GraphLaunchFn = cudaError_t (*)(cudaGraphExec_t, cudaStream_t);
using WaitEventFn = cudaError_t (*)(cudaStream_t, cudaEvent_t, unsigned int);

template <bool kPtsz>
cudaError_t routed_batch GPUSLACK_P_BATCH {
  cudaError_t r = real_of<BatchFn>(kPtsz ? slot_cudaMemcpyBatchAsync_ptsz : slot_cudaMemcpyBatchAsync)
      GPUSLACK_A_BATCH;
  if (r == cudaSuccess) pin::note_host_work(s, kPtsz);
  return r;
}
template <bool kPtsz>
cudaError_t routed_host_func(cudaStream_t s, cudaHostFn_t fn, void* data) {
  cudaError_t r = real_of<HostFuncFn>(kPtsz ? slot_cudaLaunchHostFunc_ptsz : slot_cudaLaunchHostFunc)(s, fn, data);
  if (r == cudaSuccess) pin::note_host_work(s, kPtsz);
  return r;
}
template <bool kPtsz>
cudaError_t routed_callback(cudaStream_t s, cudaStreamCallback_t cb, void* data, unsigned int flags) {
  cudaError_t r =
      real_of<CallbackFn>(kPtsz ? slot_cudaStreamAddCallback_ptsz : slot_cudaStreamAddCallback)(s, cb, data, flags);
  if (r == cudaSuccess) pin::note_host_work(s, kPtsz);
  return r;
}
template <bool kPtsz>
cudaError_t routed_graph_launch(cudaGraphExec_t exec, cudaStream_t s) {
  cudaError_t r = real_of<GraphLaunchFn>(kPtsz ? slot_cudaGraphLaunch_ptsz : slot_cudaGraphLaunch)(exec, s);
  if (r == cudaSuccess) pin::note_host_work(s, kPtsz);
  return r;
}
// The waiting stream inherits whatever the event's stream had pending:
// noted (only while anything is pending anywhere, which is cheap to ask).
template <bool kPtsz>
cudaError_t routed_wait_event(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  cudaError_t r = real_of<WaitEventFn>(kPtsz ? slot_cudaStreamWaitEvent_ptsz : slot_cudaStreamWaitEvent)(s, e, flags);
  if (r == cudaSuccess) pin::note_host_work(s, kPtsz, /*always=*/false);
  return r;
}

#define GPUSLACK_ROUTE_BOTH(sym, Fn, fn)                          \
  template <>                                                     \
  struct Route<kId_##sym> {                                       \
    static Fn get(Fn) { return &fn<false>; }                      \
  };                                                              \
  template <>                                                     \
  struct Route<kId_##sym##_ptsz> {                                \
    static Fn get(Fn) { return &fn<true>; }                       \
  };
GPUSLACK_ROUTE_BOTH(cudaMemcpyBatchAsync, BatchFn, routed_batch)
GPUSLACK_ROUTE_BOTH(cudaLaunchHostFunc, HostFuncFn, routed_host_func)
GPUSLACK_ROUTE_BOTH(cudaStreamAddCallback, CallbackFn, routed_callback)
GPUSLACK_ROUTE_BOTH(cudaGraphLaunch, GraphLaunchFn, routed_graph_launch)
GPUSLACK_ROUTE_BOTH(cudaStreamWaitEvent, WaitEventFn, routed_wait_event)
#undef GPUSLACK_ROUTE_BOTH

}  // namespace
}  // namespace interpose
}  // namespace gpuslack
