// Routes of streams and devices, for what the allocator must know:
// streams created and destroyed (the registry frees are fenced against,
// alloc/stream_registry.h), graph captures (Note [Frees during capture]),
// peer access granted (cudaDeviceEnablePeerAccess). routes.h has the list.
#pragma once

#include "alloc/stream_registry.h"
#include "alloc/vmm.h"
#include "cuda/runtime_api.h"
#include "pin/host_work.h"
#include "route.h"

namespace gpuslack {
namespace interpose {
namespace {

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

GPUSLACK_ROUTE(cudaDeviceEnablePeerAccess, EnablePeerFn, routed_enable_peer_access)
GPUSLACK_ROUTE_PAIR(cudaStreamBeginCapture, _ptsz, BeginCaptureFn, routed_begin_capture)
GPUSLACK_ROUTE_PAIR(cudaStreamEndCapture, _ptsz, EndCaptureFn, routed_end_capture)
GPUSLACK_ROUTE(cudaStreamCreateWithFlags, CreateWithFlagsFn, routed_create_with_flags)
GPUSLACK_ROUTE(cudaStreamCreateWithPriority, CreateWithPriorityFn, routed_create_with_priority)
GPUSLACK_ROUTE(cudaStreamDestroy, DestroyFn, routed_destroy)

}  // namespace
}  // namespace interpose
}  // namespace gpuslack
