// Routes of copies: cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2D(Async) to
// the staged copies (pin/staged_copy.h), pageable memory through pinned
// staging; and the calls that enqueue host-visible work the staged copies
// must wait for (pin/host_work.h). routes.h has the list, and why these
// routes are not plain forwarding.
#pragma once

#include "pin/host_work.h"
#include "pin/staged_copy.h"
#include "route.h"

namespace gpuslack {
namespace interpose {
namespace {

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
  pin::CopyCall c = pin::CopyCall::linear(dst, src, width, kind, s);
  c.height = height;
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

GPUSLACK_ROUTE_PAIR(cudaMemcpy, _ptds, MemcpyFn, routed_memcpy)
GPUSLACK_ROUTE_PAIR(cudaMemcpyAsync, _ptsz, MemcpyAsyncFn, routed_memcpy_async)
GPUSLACK_ROUTE_PAIR(cudaMemcpy2D, _ptds, Memcpy2DFn, routed_memcpy_2d)
GPUSLACK_ROUTE_PAIR(cudaMemcpy2DAsync, _ptsz, Memcpy2DAsyncFn, routed_memcpy_2d_async)
GPUSLACK_ROUTE_PAIR(cudaMemcpyBatchAsync, _ptsz, BatchFn, routed_batch)
GPUSLACK_ROUTE_PAIR(cudaLaunchHostFunc, _ptsz, HostFuncFn, routed_host_func)
GPUSLACK_ROUTE_PAIR(cudaStreamAddCallback, _ptsz, CallbackFn, routed_callback)
GPUSLACK_ROUTE_PAIR(cudaGraphLaunch, _ptsz, GraphLaunchFn, routed_graph_launch)
GPUSLACK_ROUTE_PAIR(cudaStreamWaitEvent, _ptsz, WaitEventFn, routed_wait_event)

}  // namespace
}  // namespace interpose
}  // namespace gpuslack
