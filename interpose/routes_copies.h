// Routes of copies and memsets: cudaMemcpy, cudaMemcpyAsync,
// cudaMemcpy2D(Async) to the staged copies (pin/staged_copy.h), pageable
// memory through pinned staging; the calls that enqueue host-visible work
// the staged copies must wait for (pin/host_work.h); and every copy and
// memset checked against the blocks of the VMM allocator (Note [Ranges in
// VMM blocks]). routes.h has the list, and why these routes are not plain
// forwarding.
#pragma once

#include <initializer_list>

#include "alloc/vmm.h"
#include "cuda/fail.h"
#include "pin/host_work.h"
#include "pin/staged_copy.h"
#include "route.h"

namespace gpuslack {
namespace interpose {
namespace {

// Note [Ranges in VMM blocks]: the runtime sees a reservation of the VMM
// allocator as one large mapping, so it cannot refuse a copy or memset
// that runs past the end of one of gpuslack's blocks: it would write the
// next block, or fault on unmapped reservation. Every routed call that
// names a device range checks it here first (alloc::vmm_range; with the
// native allocator one atomic load), and one that leaves its block, or
// names a freed block or free space, gets what the runtime gives for
// cudaMalloc memory: the runtime's own answer to the same call with
// nothing to do (a zero size: its other arguments are checked as before,
// so a bad stream, device or pitch is refused as it would have been), else
// cudaErrorInvalidValue, recorded as the last error (cuda/fail.h). Nothing
// is written either way.

// A device range a call names: `bytes` from `p`.
struct Range {
  const void* p;
  size_t bytes;
};
// Whether any of `ranges` leaves the VMM block it lies in.
bool leaves_vmm_block(std::initializer_list<Range> ranges) {
  for (const Range& r : ranges)
    if (r.bytes && alloc::vmm_range(r.p, r.bytes) == alloc::VmmRange::kOutside) return true;
  return false;
}
// What the application gets for such a call: `probe` is the runtime's
// answer to the same call with a zero size.
cudaError_t refused_range(cudaError_t probe) { return probe != cudaSuccess ? probe : cuda::fail(cudaErrorInvalidValue); }
// The bytes a 2D memset spans: `height` rows of `width`, `pitch` apart (a
// zero width still spans the rows' starts, which the simulated runtime's
// check counts too: tests/simcuda).
size_t span_2d(size_t pitch, size_t width, size_t height) { return height ? (height - 1) * pitch + width : 0; }

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

// Every cudaMemcpy(2D)(Async): its VMM ranges (Note [Ranges in VMM
// blocks]; a bad pitch is the runtime's to refuse first), then the stager.
cudaError_t routed_copy(const pin::CopyCall& c, pin::NativeCopy native, void* real) {
  if (!c.bad_pitch() && leaves_vmm_block({{c.dst, c.dst_span()}, {c.src, c.src_span()}})) {
    pin::CopyCall nothing = c;
    nothing.width = 0;
    return refused_range(native(nothing, real));
  }
  return pin::stager().copy(c, native, real);
}

template <bool kPtds>
cudaError_t routed_memcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  pin::CopyCall c = copy_call(dst, src, n, 1, kind, nullptr, kPtds, true,
                              kPtds ? kCall_cudaMemcpy_ptds : kCall_cudaMemcpy);
  return routed_copy(c, &native_memcpy, real_address(kPtds ? slot_cudaMemcpy_ptds : slot_cudaMemcpy));
}
template <bool kPtsz>
cudaError_t routed_memcpy_async(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  pin::CopyCall c = copy_call(dst, src, n, 1, kind, s, kPtsz, false,
                              kPtsz ? kCall_cudaMemcpyAsync_ptsz : kCall_cudaMemcpyAsync);
  return routed_copy(c, &native_memcpy_async, real_address(kPtsz ? slot_cudaMemcpyAsync_ptsz : slot_cudaMemcpyAsync));
}
template <bool kPtds>
cudaError_t routed_memcpy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h,
                             cudaMemcpyKind kind) {
  pin::CopyCall c = copy_call(dst, src, w, h, kind, nullptr, kPtds, true,
                              kPtds ? kCall_cudaMemcpy2D_ptds : kCall_cudaMemcpy2D);
  c.dpitch = dpitch;
  c.spitch = spitch;
  c.pitched = true;
  return routed_copy(c, &native_memcpy_2d, real_address(kPtds ? slot_cudaMemcpy2D_ptds : slot_cudaMemcpy2D));
}
template <bool kPtsz>
cudaError_t routed_memcpy_2d_async(void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h,
                                   cudaMemcpyKind kind, cudaStream_t s) {
  pin::CopyCall c = copy_call(dst, src, w, h, kind, s, kPtsz, false,
                              kPtsz ? kCall_cudaMemcpy2DAsync_ptsz : kCall_cudaMemcpy2DAsync);
  c.dpitch = dpitch;
  c.spitch = spitch;
  c.pitched = true;
  return routed_copy(c, &native_memcpy_2d_async,
                     real_address(kPtsz ? slot_cudaMemcpy2DAsync_ptsz : slot_cudaMemcpy2DAsync));
}

// Peer copies and memsets: nothing but their VMM ranges (Note [Ranges in
// VMM blocks]).
using PeerFn = cudaError_t (*)(void*, int, const void*, int, size_t);
using PeerAsyncFn = cudaError_t (*)(void*, int, const void*, int, size_t, cudaStream_t);
using MemsetFn = cudaError_t (*)(void*, int, size_t);
using MemsetAsyncFn = cudaError_t (*)(void*, int, size_t, cudaStream_t);
using Memset2DFn = cudaError_t (*)(void*, size_t, int, size_t, size_t);
using Memset2DAsyncFn = cudaError_t (*)(void*, size_t, int, size_t, size_t, cudaStream_t);

cudaError_t routed_peer(void* dst, int dst_dev, const void* src, int src_dev, size_t n) {
  PeerFn real = real_of<PeerFn>(slot_cudaMemcpyPeer);
  if (leaves_vmm_block({{dst, n}, {src, n}})) return refused_range(real(dst, dst_dev, src, src_dev, 0));
  return real(dst, dst_dev, src, src_dev, n);
}
cudaError_t routed_peer_async(void* dst, int dst_dev, const void* src, int src_dev, size_t n, cudaStream_t s) {
  PeerAsyncFn real = real_of<PeerAsyncFn>(slot_cudaMemcpyPeerAsync);
  if (leaves_vmm_block({{dst, n}, {src, n}})) return refused_range(real(dst, dst_dev, src, src_dev, 0, s));
  return real(dst, dst_dev, src, src_dev, n, s);
}
template <bool kPtds>
cudaError_t routed_memset(void* p, int v, size_t n) {
  MemsetFn real = real_of<MemsetFn>(kPtds ? slot_cudaMemset_ptds : slot_cudaMemset);
  if (leaves_vmm_block({{p, n}})) return refused_range(real(p, v, 0));
  return real(p, v, n);
}
template <bool kPtsz>
cudaError_t routed_memset_async(void* p, int v, size_t n, cudaStream_t s) {
  MemsetAsyncFn real = real_of<MemsetAsyncFn>(kPtsz ? slot_cudaMemsetAsync_ptsz : slot_cudaMemsetAsync);
  if (leaves_vmm_block({{p, n}})) return refused_range(real(p, v, 0, s));
  return real(p, v, n, s);
}
// A width past the pitch is the runtime's to refuse first.
template <bool kPtds>
cudaError_t routed_memset_2d(void* p, size_t pitch, int v, size_t w, size_t h) {
  Memset2DFn real = real_of<Memset2DFn>(kPtds ? slot_cudaMemset2D_ptds : slot_cudaMemset2D);
  if (w <= pitch && leaves_vmm_block({{p, span_2d(pitch, w, h)}})) return refused_range(real(p, pitch, v, 0, 0));
  return real(p, pitch, v, w, h);
}
template <bool kPtsz>
cudaError_t routed_memset_2d_async(void* p, size_t pitch, int v, size_t w, size_t h, cudaStream_t s) {
  Memset2DAsyncFn real = real_of<Memset2DAsyncFn>(kPtsz ? slot_cudaMemset2DAsync_ptsz : slot_cudaMemset2DAsync);
  if (w <= pitch && leaves_vmm_block({{p, span_2d(pitch, w, h)}})) return refused_range(real(p, pitch, v, 0, 0, s));
  return real(p, pitch, v, w, h, s);
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

// A batch whose copy i leaves its VMM block: copies 0..i-1 are made, as
// the runtime makes them before it refuses copy i of cudaMalloc memory
// (Note [Ranges in VMM blocks]). When that is the first copy, the runtime
// still answers for the rest of the call (a bad stream first) as it would:
// it is asked for the first copy with nothing to do.
template <bool kPtsz>
cudaError_t routed_batch GPUSLACK_P_BATCH {
  BatchFn real = real_of<BatchFn>(kPtsz ? slot_cudaMemcpyBatchAsync_ptsz : slot_cudaMemcpyBatchAsync);
  size_t valid = count;
  for (size_t i = 0; dsts && srcs && sizes && i < count; ++i)
    if (leaves_vmm_block({{dsts[i], sizes[i]}, {srcs[i], sizes[i]}})) {
      valid = i;
      break;
    }
  if (valid == 0 && count > 0) {
    const size_t nothing[1] = {0};
    return refused_range(real(dsts, srcs, nothing, 1, attrs, attr_idxs, n_attrs, s));
  }
  cudaError_t r = real(dsts, srcs, sizes, valid, attrs, attr_idxs, n_attrs, s);
  if (r != cudaSuccess) return r;
  if (valid > 0) pin::note_host_work(s, kPtsz);
  return valid == count ? r : cuda::fail(cudaErrorInvalidValue);
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
GPUSLACK_ROUTE(cudaMemcpyPeer, PeerFn, routed_peer)
GPUSLACK_ROUTE(cudaMemcpyPeerAsync, PeerAsyncFn, routed_peer_async)
GPUSLACK_ROUTE_PAIR(cudaMemset, _ptds, MemsetFn, routed_memset)
GPUSLACK_ROUTE_PAIR(cudaMemsetAsync, _ptsz, MemsetAsyncFn, routed_memset_async)
GPUSLACK_ROUTE_PAIR(cudaMemset2D, _ptds, Memset2DFn, routed_memset_2d)
GPUSLACK_ROUTE_PAIR(cudaMemset2DAsync, _ptsz, Memset2DAsyncFn, routed_memset_2d_async)
GPUSLACK_ROUTE_PAIR(cudaMemcpyBatchAsync, _ptsz, BatchFn, routed_batch)
GPUSLACK_ROUTE_PAIR(cudaLaunchHostFunc, _ptsz, HostFuncFn, routed_host_func)
GPUSLACK_ROUTE_PAIR(cudaStreamAddCallback, _ptsz, CallbackFn, routed_callback)
GPUSLACK_ROUTE_PAIR(cudaGraphLaunch, _ptsz, GraphLaunchFn, routed_graph_launch)
GPUSLACK_ROUTE_PAIR(cudaStreamWaitEvent, _ptsz, WaitEventFn, routed_wait_event)

}  // namespace
}  // namespace interpose
}  // namespace gpuslack
