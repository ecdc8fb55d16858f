// The hooked symbols: one table, from which interpose/hooks.cc generates
// every hook (docs/design.md, "Rooms": interpose/ is the only place that
// knows symbol names; nothing here is hand-copied per symbol).
//
// Not to be included outside interpose/.
//
// A row: X(symbol, return type, (parameters), (arguments), category, bytes, info)
//   - symbol: the exported name, exactly as the real library exports it,
//     including the _ptsz/_ptds per-thread-default-stream variants that the
//     toolkit's libcudart.so.13 exports (nm -D);
//   - parameters/arguments: the real signature, from the CUDA 13 headers;
//   - category: what time blocked in the call counts as (api_call.h);
//   - bytes: an expression over the parameters, evaluated before the call
//     (the NVTX payload);
//   - info: an expression over the parameters giving the CallInfo
//     (describe.h), evaluated after a successful call, outside the timing.
//
// Adding a symbol is adding a row. Later tables (NCCL, the driver API, the
// dlsym/cuGetProcAddress entry points) have the same shape and are expanded
// by the same generator.
//
// ABI note: the rows follow the CUDA 13 runtime, and the same exported
// names serve a program linked against libcudart.so.12 (whose references
// ask for version node libcudart.so.12; gpuslack's unversioned definitions
// satisfy them). Every row here and in launch_hook_table.h was compared
// with the CUDA 12.9 headers (nvidia-cuda-runtime-cu12 12.9.79) by
// scripts/check_cuda12_abi.py (ctest cuda12.hooked_rows_abi where
// -DGPUSLACK_CUDA12_INCLUDE_DIR names such headers): all 43 take the same
// parameter types in CUDA 12 but cudaMemcpyBatchAsync (and so _ptsz).
//
// Note [Two ABIs of cudaMemcpyBatchAsync]: CUDA 12.8/12.9 pass a
// `size_t* failIdx` between numAttrs and the stream (cudaMemcpyBatchAsync
// and _ptsz alike). Their rows take the union: numAttrs, then two pointer
// slots, `tail0` (CUDA 13: the stream; CUDA 12: failIdx) and `tail1`
// (CUDA 12: the stream; from a CUDA 13 caller, a word of its stack frame,
// read and never used). Both are pointers, passed alike on the x86-64 and
// AArch64 calling conventions, so one exported function accepts either
// caller; its route (routes_copies.inc) takes them as the loaded runtime's
// major version says (cuda::runtime_major_version: one relaxed load) and
// calls the runtime with its own parameter list. Chosen over a second
// generated signature per row: one pair of rows differs, and a route is
// where a row's arguments are already taken apart. A caller through the
// table's type (the tests) passes tail1 too. hooks.cc renames the CUDA 13
// header's declaration of cudaMemcpyBatchAsync out of the way, as its
// hook's parameters differ.
//
// What else differs in CUDA 12 is not a hooked row: cudaStreamGetCaptureInfo
// takes three arguments there (gpuslack's own query calls _v2 on a CUDA 12
// runtime: cuda/runtime_api.h), cudaPointerAttributes is 64 bytes smaller
// (CUDA 13 appended reserved words: passing the larger one is safe), and
// cudaGetDeviceProperties is _v2 with another cudaDeviceProp (gpuslack does
// not call it).
#pragma once

#include <cuda_runtime_api.h>

#include "describe.h"

// The _ptsz/_ptds variants are declared by the headers only when a program
// is compiled for the per-thread default stream.
extern "C" {
cudaError_t cudaMallocAsync_ptsz(void**, size_t, cudaStream_t);
cudaError_t cudaFreeAsync_ptsz(void*, cudaStream_t);
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t, enum cudaStreamCaptureMode);
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t, cudaGraph_t*);
cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t, cudaGraph_t, const cudaGraphNode_t*,
                                               const cudaGraphEdgeData*, size_t, enum cudaStreamCaptureMode);
cudaError_t cudaMallocFromPoolAsync_ptsz(void**, size_t, cudaMemPool_t, cudaStream_t);
cudaError_t cudaMemcpy_ptds(void*, const void*, size_t, enum cudaMemcpyKind);
cudaError_t cudaMemcpyAsync_ptsz(void*, const void*, size_t, enum cudaMemcpyKind, cudaStream_t);
cudaError_t cudaMemcpy2D_ptds(void*, size_t, const void*, size_t, size_t, size_t, enum cudaMemcpyKind);
cudaError_t cudaMemcpy2DAsync_ptsz(void*, size_t, const void*, size_t, size_t, size_t, enum cudaMemcpyKind,
                                   cudaStream_t);
cudaError_t cudaMemset_ptds(void*, int, size_t);
cudaError_t cudaMemsetAsync_ptsz(void*, int, size_t, cudaStream_t);
cudaError_t cudaMemset2D_ptds(void*, size_t, int, size_t, size_t);
cudaError_t cudaMemset2DAsync_ptsz(void*, size_t, int, size_t, size_t, cudaStream_t);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t, cudaEvent_t, unsigned int);
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t, cudaHostFn_t, void*);
cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t, cudaStreamCallback_t, void*, unsigned int);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t, cudaStream_t);
}

#define GPUSLACK_ALLOC Category::kAllocation
#define GPUSLACK_COPY Category::kCopy
#define GPUSLACK_SYNC Category::kSync
#define GPUSLACK_OTHER Category::kOther

// Parameter lists that several rows share.
#define GPUSLACK_P_MEMCPY (void* dst, const void* src, size_t n, enum cudaMemcpyKind kind)
#define GPUSLACK_P_MEMCPY_ASYNC (void* dst, const void* src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s)
#define GPUSLACK_P_MEMCPY2D \
  (void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h, enum cudaMemcpyKind kind)
#define GPUSLACK_P_MEMCPY2D_ASYNC                                                                     \
  (void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h, enum cudaMemcpyKind kind, \
   cudaStream_t s)
// Both ABIs of cudaMemcpyBatchAsync: Note [Two ABIs of cudaMemcpyBatchAsync].
#define GPUSLACK_P_BATCH                                                                      \
  (void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count,             \
   struct cudaMemcpyAttributes* attrs, size_t* attr_idxs, size_t n_attrs, void* tail0, void* tail1)
#define GPUSLACK_A_BATCH (dsts, srcs, sizes, count, attrs, attr_idxs, n_attrs, tail0, tail1)

#define GPUSLACK_RUNTIME_HOOKS(X)                                                                          \
  /* ---- allocation ---- */                                                                             \
  X(cudaMalloc, cudaError_t, (void** p, size_t size), (p, size), GPUSLACK_ALLOC, size, alloc_info(size))   \
  X(cudaFree, cudaError_t, (void* p), (p), GPUSLACK_ALLOC, 0, free_info(p))                               \
  X(cudaMallocAsync, cudaError_t, (void** p, size_t size, cudaStream_t s), (p, size, s), GPUSLACK_ALLOC,  \
    size, alloc_info(size))                                                                              \
  X(cudaMallocAsync_ptsz, cudaError_t, (void** p, size_t size, cudaStream_t s), (p, size, s),            \
    GPUSLACK_ALLOC, size, alloc_info(size))                                                              \
  X(cudaFreeAsync, cudaError_t, (void* p, cudaStream_t s), (p, s), GPUSLACK_ALLOC, 0, free_info(p))       \
  X(cudaFreeAsync_ptsz, cudaError_t, (void* p, cudaStream_t s), (p, s), GPUSLACK_ALLOC, 0, free_info(p))  \
  X(cudaMallocFromPoolAsync, cudaError_t, (void** p, size_t size, cudaMemPool_t pool, cudaStream_t s),    \
    (p, size, pool, s), GPUSLACK_ALLOC, size, alloc_info(size))                                          \
  X(cudaMallocFromPoolAsync_ptsz, cudaError_t,                                                           \
    (void** p, size_t size, cudaMemPool_t pool, cudaStream_t s), (p, size, pool, s), GPUSLACK_ALLOC,     \
    size, alloc_info(size))                                                                              \
  X(cudaMallocHost, cudaError_t, (void** p, size_t size), (p, size), GPUSLACK_ALLOC, size,                \
    alloc_info(size))                                                                                    \
  X(cudaHostAlloc, cudaError_t, (void** p, size_t size, unsigned int flags), (p, size, flags),           \
    GPUSLACK_ALLOC, size, alloc_info(size))                                                              \
  X(cudaFreeHost, cudaError_t, (void* p), (p), GPUSLACK_ALLOC, 0, free_info(p))                           \
  X(cudaHostRegister, cudaError_t, (void* p, size_t size, unsigned int flags), (p, size, flags),         \
    GPUSLACK_ALLOC, size, alloc_info(size))                                                              \
  X(cudaHostUnregister, cudaError_t, (void* p), (p), GPUSLACK_ALLOC, 0, free_info(p))                     \
  X(cudaMallocManaged, cudaError_t, (void** p, size_t size, unsigned int flags), (p, size, flags),       \
    GPUSLACK_ALLOC, size, alloc_info(size))                                                              \
  X(cudaMallocPitch, cudaError_t, (void** p, size_t* pitch, size_t w, size_t h), (p, pitch, w, h),       \
    GPUSLACK_ALLOC, w* h, alloc_info(w * h))                                                             \
  X(cudaMalloc3D, cudaError_t, (struct cudaPitchedPtr * p, struct cudaExtent e), (p, e), GPUSLACK_ALLOC, \
    e.width* e.height* e.depth, alloc_info(e.width * e.height * e.depth))                                \
  /* ---- copies and memsets ---- */                                                                     \
  X(cudaMemcpy, cudaError_t, GPUSLACK_P_MEMCPY, (dst, src, n, kind), GPUSLACK_COPY, n,                   \
    copy_info(dst, src, n, kind))                                                                        \
  X(cudaMemcpy_ptds, cudaError_t, GPUSLACK_P_MEMCPY, (dst, src, n, kind), GPUSLACK_COPY, n,              \
    copy_info(dst, src, n, kind))                                                                        \
  X(cudaMemcpyAsync, cudaError_t, GPUSLACK_P_MEMCPY_ASYNC, (dst, src, n, kind, s), GPUSLACK_COPY, n,     \
    copy_info(dst, src, n, kind))                                                                        \
  X(cudaMemcpyAsync_ptsz, cudaError_t, GPUSLACK_P_MEMCPY_ASYNC, (dst, src, n, kind, s), GPUSLACK_COPY,   \
    n, copy_info(dst, src, n, kind))                                                                     \
  X(cudaMemcpy2D, cudaError_t, GPUSLACK_P_MEMCPY2D, (dst, dpitch, src, spitch, w, h, kind),              \
    GPUSLACK_COPY, w* h, copy_info(dst, src, w * h, kind))                                               \
  X(cudaMemcpy2D_ptds, cudaError_t, GPUSLACK_P_MEMCPY2D, (dst, dpitch, src, spitch, w, h, kind),         \
    GPUSLACK_COPY, w* h, copy_info(dst, src, w * h, kind))                                               \
  X(cudaMemcpy2DAsync, cudaError_t, GPUSLACK_P_MEMCPY2D_ASYNC, (dst, dpitch, src, spitch, w, h, kind, s), \
    GPUSLACK_COPY, w* h, copy_info(dst, src, w * h, kind))                                               \
  X(cudaMemcpy2DAsync_ptsz, cudaError_t, GPUSLACK_P_MEMCPY2D_ASYNC,                                      \
    (dst, dpitch, src, spitch, w, h, kind, s), GPUSLACK_COPY, w* h, copy_info(dst, src, w * h, kind))    \
  X(cudaMemcpyPeer, cudaError_t, (void* dst, int dst_dev, const void* src, int src_dev, size_t n),       \
    (dst, dst_dev, src, src_dev, n), GPUSLACK_COPY, n, peer_info(n))                                     \
  X(cudaMemcpyPeerAsync, cudaError_t,                                                                    \
    (void* dst, int dst_dev, const void* src, int src_dev, size_t n, cudaStream_t s),                    \
    (dst, dst_dev, src, src_dev, n, s), GPUSLACK_COPY, n, peer_info(n))                                  \
  X(cudaMemcpyBatchAsync, cudaError_t, GPUSLACK_P_BATCH, GPUSLACK_A_BATCH, GPUSLACK_COPY,                \
    batch_bytes(sizes, count), batch_info(dsts, srcs, sizes, count))                                     \
  X(cudaMemcpyBatchAsync_ptsz, cudaError_t, GPUSLACK_P_BATCH, GPUSLACK_A_BATCH, GPUSLACK_COPY,           \
    batch_bytes(sizes, count), batch_info(dsts, srcs, sizes, count))                                     \
  X(cudaMemset, cudaError_t, (void* p, int v, size_t n), (p, v, n), GPUSLACK_COPY, n, memset_info(n))     \
  X(cudaMemset_ptds, cudaError_t, (void* p, int v, size_t n), (p, v, n), GPUSLACK_COPY, n,               \
    memset_info(n))                                                                                      \
  X(cudaMemsetAsync, cudaError_t, (void* p, int v, size_t n, cudaStream_t s), (p, v, n, s),              \
    GPUSLACK_COPY, n, memset_info(n))                                                                    \
  X(cudaMemsetAsync_ptsz, cudaError_t, (void* p, int v, size_t n, cudaStream_t s), (p, v, n, s),         \
    GPUSLACK_COPY, n, memset_info(n))                                                                    \
  X(cudaMemset2D, cudaError_t, (void* p, size_t pitch, int v, size_t w, size_t h), (p, pitch, v, w, h),  \
    GPUSLACK_COPY, w* h, memset_info(w * h))                                                             \
  X(cudaMemset2D_ptds, cudaError_t, (void* p, size_t pitch, int v, size_t w, size_t h),                  \
    (p, pitch, v, w, h), GPUSLACK_COPY, w* h, memset_info(w * h))                                        \
  X(cudaMemset2DAsync, cudaError_t, (void* p, size_t pitch, int v, size_t w, size_t h, cudaStream_t s),  \
    (p, pitch, v, w, h, s), GPUSLACK_COPY, w* h, memset_info(w * h))                                     \
  X(cudaMemset2DAsync_ptsz, cudaError_t,                                                                 \
    (void* p, size_t pitch, int v, size_t w, size_t h, cudaStream_t s), (p, pitch, v, w, h, s),          \
    GPUSLACK_COPY, w* h, memset_info(w * h))                                                             \
  /* ---- explicit synchronization ---- */                                                               \
  X(cudaDeviceSynchronize, cudaError_t, (void), (), GPUSLACK_SYNC, 0, CallInfo{})                         \
  X(cudaStreamSynchronize, cudaError_t, (cudaStream_t s), (s), GPUSLACK_SYNC, 0, CallInfo{})              \
  X(cudaStreamSynchronize_ptsz, cudaError_t, (cudaStream_t s), (s), GPUSLACK_SYNC, 0, CallInfo{})         \
  X(cudaEventSynchronize, cudaError_t, (cudaEvent_t e), (e), GPUSLACK_SYNC, 0, CallInfo{})                \
  /* ---- stream lifetime, queries ---- */                                                               \
  X(cudaStreamCreate, cudaError_t, (cudaStream_t * s), (s), GPUSLACK_OTHER, 0, CallInfo{})                \
  X(cudaStreamCreateWithFlags, cudaError_t, (cudaStream_t * s, unsigned int flags), (s, flags),          \
    GPUSLACK_OTHER, 0, CallInfo{})                                                                       \
  X(cudaStreamCreateWithPriority, cudaError_t, (cudaStream_t * s, unsigned int flags, int priority),     \
    (s, flags, priority), GPUSLACK_OTHER, 0, CallInfo{})                                                 \
  X(cudaStreamDestroy, cudaError_t, (cudaStream_t s), (s), GPUSLACK_OTHER, 0, CallInfo{})                 \
  X(cudaMemGetInfo, cudaError_t, (size_t * free_bytes, size_t * total), (free_bytes, total),             \
    GPUSLACK_OTHER, 0, CallInfo{})                                                                       \
  X(cudaIpcGetMemHandle, cudaError_t, (cudaIpcMemHandle_t * handle, void* p), (handle, p), GPUSLACK_OTHER, \
    0, CallInfo{})                                                                                       \
  X(cudaIpcOpenMemHandle, cudaError_t, (void** p, cudaIpcMemHandle_t handle, unsigned int flags),       \
    (p, handle, flags), GPUSLACK_OTHER, 0, CallInfo{})                                                   \
  X(cudaIpcCloseMemHandle, cudaError_t, (void* p), (p), GPUSLACK_OTHER, 0, CallInfo{})                  \
  /* ---- what the VMM allocator follows: graph capture, peer access ---- */                            \
  X(cudaStreamBeginCapture, cudaError_t, (cudaStream_t s, enum cudaStreamCaptureMode mode), (s, mode),  \
    GPUSLACK_OTHER, 0, CallInfo{})                                                                       \
  X(cudaStreamBeginCapture_ptsz, cudaError_t, (cudaStream_t s, enum cudaStreamCaptureMode mode),        \
    (s, mode), GPUSLACK_OTHER, 0, CallInfo{})                                                            \
  X(cudaStreamEndCapture, cudaError_t, (cudaStream_t s, cudaGraph_t * graph), (s, graph), GPUSLACK_OTHER, \
    0, CallInfo{})                                                                                       \
  X(cudaStreamBeginCaptureToGraph, cudaError_t,                                                          \
    (cudaStream_t s, cudaGraph_t graph, const cudaGraphNode_t* deps, const cudaGraphEdgeData* edges,     \
     size_t n, enum cudaStreamCaptureMode mode),                                                         \
    (s, graph, deps, edges, n, mode), GPUSLACK_OTHER, 0, CallInfo{})                                     \
  X(cudaStreamBeginCaptureToGraph_ptsz, cudaError_t,                                                     \
    (cudaStream_t s, cudaGraph_t graph, const cudaGraphNode_t* deps, const cudaGraphEdgeData* edges,     \
     size_t n, enum cudaStreamCaptureMode mode),                                                         \
    (s, graph, deps, edges, n, mode), GPUSLACK_OTHER, 0, CallInfo{})                                     \
  X(cudaStreamEndCapture_ptsz, cudaError_t, (cudaStream_t s, cudaGraph_t * graph), (s, graph),          \
    GPUSLACK_OTHER, 0, CallInfo{})                                                                       \
  X(cudaDeviceEnablePeerAccess, cudaError_t, (int peer, unsigned int flags), (peer, flags), GPUSLACK_OTHER, \
    0, CallInfo{})                                                                                       \
  /* ---- what staged copies follow: work whose effect the host sees, cross-stream waits ---- */        \
  X(cudaLaunchHostFunc, cudaError_t, (cudaStream_t s, cudaHostFn_t fn, void* data), (s, fn, data),       \
    GPUSLACK_OTHER, 0, CallInfo{})                                                                       \
  X(cudaLaunchHostFunc_ptsz, cudaError_t, (cudaStream_t s, cudaHostFn_t fn, void* data), (s, fn, data),  \
    GPUSLACK_OTHER, 0, CallInfo{})                                                                       \
  X(cudaStreamAddCallback, cudaError_t,                                                                  \
    (cudaStream_t s, cudaStreamCallback_t cb, void* data, unsigned int flags), (s, cb, data, flags),     \
    GPUSLACK_OTHER, 0, CallInfo{})                                                                       \
  X(cudaStreamAddCallback_ptsz, cudaError_t,                                                             \
    (cudaStream_t s, cudaStreamCallback_t cb, void* data, unsigned int flags), (s, cb, data, flags),     \
    GPUSLACK_OTHER, 0, CallInfo{})                                                                       \
  X(cudaGraphLaunch, cudaError_t, (cudaGraphExec_t exec, cudaStream_t s), (exec, s), GPUSLACK_OTHER, 0,  \
    CallInfo{})                                                                                          \
  X(cudaGraphLaunch_ptsz, cudaError_t, (cudaGraphExec_t exec, cudaStream_t s), (exec, s), GPUSLACK_OTHER, \
    0, CallInfo{})                                                                                       \
  X(cudaStreamWaitEvent, cudaError_t, (cudaStream_t s, cudaEvent_t e, unsigned int flags), (s, e, flags), \
    GPUSLACK_OTHER, 0, CallInfo{})                                                                       \
  X(cudaStreamWaitEvent_ptsz, cudaError_t, (cudaStream_t s, cudaEvent_t e, unsigned int flags),          \
    (s, e, flags), GPUSLACK_OTHER, 0, CallInfo{})
