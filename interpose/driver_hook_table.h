// The hooked CUDA driver API symbols (libcuda.so.1): the third table of the
// generator in hooks.cc (the first is hook_table.h; same columns, expanded
// with an empty `track` through the driver adapter), its counted rows
// (kernel launches, as launch_hook_table.h's), and the versions table that
// the entry points (entry_points.cc: cuGetProcAddress, cudaGetDriverEntryPoint)
// use to hand out these hooks.
//
// Not to be included outside interpose/.
//
// A timed row: X(symbol, return type, (parameters), (arguments), category, bytes, info)
//   - symbol: the exported name, exactly as the CUDA 13 libcuda.so.1 exports
//     it (nm -D lib64/stubs/libcuda.so): cuda.h #defines the API names to
//     versioned ones (cuMemAlloc -> cuMemAlloc_v2) and, for per-thread
//     default stream builds, to the _ptds/_ptsz variants, which are rows of
//     their own;
//   - parameters/arguments: cuda.h's (CUDA 13);
//   - category, bytes, info: as hook_table.h's. The VMM rows account what
//     other allocators (PyTorch's expandable segments, vLLM, NCCL) do with
//     the driver: cuMemMap's bytes are the bytes mapped, cuMemCreate's the
//     physical bytes created; the unmaps and releases are counted.
//
// What the driver rows do and do not do (decided against the runtime's
// routes, routes.inc):
//   - they forward: no driver call is served by gpuslack's VMM allocator,
//     pinned heap or staged copies. cuMemAlloc under allocator:vmm could be
//     served by the VMM allocator only if cuMemFree, cuMemGetAddressRange,
//     cuPointerGetAttribute, cuMemcpy* and the IPC calls all knew its blocks
//     (the runtime path has those routes; the driver path would need each
//     again), so it is left to the driver. A driver copy naming memory of
//     gpuslack's VMM allocator is checked by the driver itself: the
//     allocator's blocks are ordinary mapped ranges to it.
//   - the stream rows (cuStreamCreate, cuStreamCreateWithPriority,
//     cuStreamDestroy_v2) are routed as the runtime's are
//     (routes_streams.inc): the stream registry (sync/stream_registry.h)
//     learns of them, so the VMM allocator fences its frees against streams
//     a driver-API library made;
//   - a pointer of gpuslack's VMM allocator (cudaMalloc under
//     allocator:vmm) given to cuMemFree is the driver's to refuse, as it is
//     not a cuMemAlloc allocation; mixing the two APIs on one pointer is
//     not supported under allocator:vmm.
//   - the runtime's own driver calls never come through these hooks: it
//     finds the driver through its own handle of libcuda.so.1, so an
//     application's runtime call is counted once (hooks.cc, Note [Counted
//     once]).
//
// Adding a symbol: a row here, its versions row below if it is handed out by
// cuGetProcAddress under a base name, and the simulated driver's definition.
#pragma once

#include <cuda.h>

#include "describe.h"
#include "hook_table.h"  // the categories' names (GPUSLACK_ALLOC, ...)

// The per-thread default stream variants: cuda.h declares them only when a
// program is compiled for the per-thread default stream.
extern "C" {
CUresult cuMemAllocAsync_ptsz(CUdeviceptr*, size_t, CUstream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr, CUstream);
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr, const void*, size_t);
CUresult cuMemcpyDtoH_v2_ptds(void*, CUdeviceptr, size_t);
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr, CUdeviceptr, size_t);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr, const void*, size_t, CUstream);
CUresult cuMemcpyDtoHAsync_v2_ptsz(void*, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpy_ptds(CUdeviceptr, CUdeviceptr, size_t);
CUresult cuMemcpyAsync_ptsz(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D*);
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D*, CUstream);
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D*);
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D*, CUstream);
CUresult cuMemcpyPeer_ptds(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
CUresult cuMemsetD8_v2_ptds(CUdeviceptr, unsigned char, size_t);
CUresult cuMemsetD16_v2_ptds(CUdeviceptr, unsigned short, size_t);
CUresult cuMemsetD32_v2_ptds(CUdeviceptr, unsigned int, size_t);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr, unsigned char, size_t, CUstream);
CUresult cuMemsetD16Async_ptsz(CUdeviceptr, unsigned short, size_t, CUstream);
CUresult cuMemsetD32Async_ptsz(CUdeviceptr, unsigned int, size_t, CUstream);
CUresult cuStreamSynchronize_ptsz(CUstream);
CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig*, CUfunction, void**, void**);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream, CUstreamCaptureMode);
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream, CUgraph, const CUgraphNode*, const CUgraphEdgeData*, size_t,
                                          CUstreamCaptureMode);
CUresult cuStreamEndCapture_ptsz(CUstream, CUgraph*);
}
// cuda.h #defines cuStreamBeginCapture to cuStreamBeginCapture_v2; the
// exported cuStreamBeginCapture is CUDA 10.0's one-argument ABI (global
// mode; cudaTypedefs.h's PFN_cuStreamBeginCapture_v10000), hooked under its
// own name. Nothing in gpuslack calls it by its API name.
#undef cuStreamBeginCapture
extern "C" {
CUresult cuStreamBeginCapture(CUstream);
CUresult cuStreamBeginCapture_ptsz(CUstream);
}

// Parameter lists that several rows share.
#define GPUSLACK_P_CU_HTOD (CUdeviceptr dst, const void* src, size_t n)
#define GPUSLACK_P_CU_HTOD_ASYNC (CUdeviceptr dst, const void* src, size_t n, CUstream s)
#define GPUSLACK_P_CU_DTOH (void* dst, CUdeviceptr src, size_t n)
#define GPUSLACK_P_CU_DTOH_ASYNC (void* dst, CUdeviceptr src, size_t n, CUstream s)
#define GPUSLACK_P_CU_DTOD (CUdeviceptr dst, CUdeviceptr src, size_t n)
#define GPUSLACK_P_CU_DTOD_ASYNC (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
#define GPUSLACK_P_CU_PEER (CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n)
#define GPUSLACK_P_CU_PEER_ASYNC \
  (CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n, CUstream s)

#define GPUSLACK_DRIVER_HOOKS(X)                                                                           \
  /* ---- allocation ---- */                                                                             \
  X(cuMemAlloc_v2, CUresult, (CUdeviceptr * p, size_t size), (p, size), GPUSLACK_ALLOC, size,            \
    alloc_info(size))                                                                                    \
  X(cuMemFree_v2, CUresult, (CUdeviceptr p), (p), GPUSLACK_ALLOC, 0, free_info(dptr(p)))                  \
  X(cuMemAllocAsync, CUresult, (CUdeviceptr * p, size_t size, CUstream s), (p, size, s), GPUSLACK_ALLOC,  \
    size, alloc_info(size))                                                                              \
  X(cuMemAllocAsync_ptsz, CUresult, (CUdeviceptr * p, size_t size, CUstream s), (p, size, s),            \
    GPUSLACK_ALLOC, size, alloc_info(size))                                                              \
  X(cuMemFreeAsync, CUresult, (CUdeviceptr p, CUstream s), (p, s), GPUSLACK_ALLOC, 0, free_info(dptr(p))) \
  X(cuMemFreeAsync_ptsz, CUresult, (CUdeviceptr p, CUstream s), (p, s), GPUSLACK_ALLOC, 0,               \
    free_info(dptr(p)))                                                                                  \
  X(cuMemAllocHost_v2, CUresult, (void** p, size_t size), (p, size), GPUSLACK_ALLOC, size,               \
    alloc_info(size))                                                                                    \
  X(cuMemHostAlloc, CUresult, (void** p, size_t size, unsigned int flags), (p, size, flags),             \
    GPUSLACK_ALLOC, size, alloc_info(size))                                                              \
  X(cuMemFreeHost, CUresult, (void* p), (p), GPUSLACK_ALLOC, 0, free_info(p))                             \
  X(cuMemHostRegister_v2, CUresult, (void* p, size_t size, unsigned int flags), (p, size, flags),        \
    GPUSLACK_ALLOC, size, alloc_info(size))                                                              \
  X(cuMemHostUnregister, CUresult, (void* p), (p), GPUSLACK_ALLOC, 0, free_info(p))                       \
  /* ---- virtual memory management: other allocators' traffic ---- */                                  \
  X(cuMemCreate, CUresult,                                                                               \
    (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp* prop,               \
     unsigned long long flags),                                                                          \
    (handle, size, prop, flags), GPUSLACK_ALLOC, size, alloc_info(size))                                 \
  X(cuMemRelease, CUresult, (CUmemGenericAllocationHandle handle), (handle), GPUSLACK_ALLOC, 0,          \
    vmm_info(0))                                                                                         \
  X(cuMemMap, CUresult,                                                                                  \
    (CUdeviceptr p, size_t size, size_t offset, CUmemGenericAllocationHandle handle,                     \
     unsigned long long flags),                                                                          \
    (p, size, offset, handle, flags), GPUSLACK_ALLOC, size, vmm_info(size))                              \
  X(cuMemUnmap, CUresult, (CUdeviceptr p, size_t size), (p, size), GPUSLACK_ALLOC, size, vmm_info(size))  \
  X(cuMemSetAccess, CUresult, (CUdeviceptr p, size_t size, const CUmemAccessDesc* desc, size_t count),   \
    (p, size, desc, count), GPUSLACK_ALLOC, size, vmm_info(size))                                        \
  X(cuMemAddressReserve, CUresult,                                                                       \
    (CUdeviceptr * p, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags),       \
    (p, size, alignment, addr, flags), GPUSLACK_ALLOC, size, reserve_info(size))                         \
  X(cuMemAddressFree, CUresult, (CUdeviceptr p, size_t size), (p, size), GPUSLACK_ALLOC, size,           \
    reserve_info(size))                                                                                  \
  /* ---- copies and memsets ---- */                                                                     \
  X(cuMemcpyHtoD_v2, CUresult, GPUSLACK_P_CU_HTOD, (dst, src, n), GPUSLACK_COPY, n,                       \
    copy_info(dptr(dst), src, n, cudaMemcpyHostToDevice))                                                \
  X(cuMemcpyHtoD_v2_ptds, CUresult, GPUSLACK_P_CU_HTOD, (dst, src, n), GPUSLACK_COPY, n,                  \
    copy_info(dptr(dst), src, n, cudaMemcpyHostToDevice))                                                \
  X(cuMemcpyDtoH_v2, CUresult, GPUSLACK_P_CU_DTOH, (dst, src, n), GPUSLACK_COPY, n,                       \
    copy_info(dst, dptr(src), n, cudaMemcpyDeviceToHost))                                                \
  X(cuMemcpyDtoH_v2_ptds, CUresult, GPUSLACK_P_CU_DTOH, (dst, src, n), GPUSLACK_COPY, n,                  \
    copy_info(dst, dptr(src), n, cudaMemcpyDeviceToHost))                                                \
  X(cuMemcpyDtoD_v2, CUresult, GPUSLACK_P_CU_DTOD, (dst, src, n), GPUSLACK_COPY, n,                       \
    copy_info(dptr(dst), dptr(src), n, cudaMemcpyDeviceToDevice))                                        \
  X(cuMemcpyDtoD_v2_ptds, CUresult, GPUSLACK_P_CU_DTOD, (dst, src, n), GPUSLACK_COPY, n,                  \
    copy_info(dptr(dst), dptr(src), n, cudaMemcpyDeviceToDevice))                                        \
  X(cuMemcpyHtoDAsync_v2, CUresult, GPUSLACK_P_CU_HTOD_ASYNC, (dst, src, n, s), GPUSLACK_COPY, n,         \
    copy_info(dptr(dst), src, n, cudaMemcpyHostToDevice))                                                \
  X(cuMemcpyHtoDAsync_v2_ptsz, CUresult, GPUSLACK_P_CU_HTOD_ASYNC, (dst, src, n, s), GPUSLACK_COPY, n,    \
    copy_info(dptr(dst), src, n, cudaMemcpyHostToDevice))                                                \
  X(cuMemcpyDtoHAsync_v2, CUresult, GPUSLACK_P_CU_DTOH_ASYNC, (dst, src, n, s), GPUSLACK_COPY, n,         \
    copy_info(dst, dptr(src), n, cudaMemcpyDeviceToHost))                                                \
  X(cuMemcpyDtoHAsync_v2_ptsz, CUresult, GPUSLACK_P_CU_DTOH_ASYNC, (dst, src, n, s), GPUSLACK_COPY, n,    \
    copy_info(dst, dptr(src), n, cudaMemcpyDeviceToHost))                                                \
  X(cuMemcpyDtoDAsync_v2, CUresult, GPUSLACK_P_CU_DTOD_ASYNC, (dst, src, n, s), GPUSLACK_COPY, n,         \
    copy_info(dptr(dst), dptr(src), n, cudaMemcpyDeviceToDevice))                                        \
  X(cuMemcpyDtoDAsync_v2_ptsz, CUresult, GPUSLACK_P_CU_DTOD_ASYNC, (dst, src, n, s), GPUSLACK_COPY, n,    \
    copy_info(dptr(dst), dptr(src), n, cudaMemcpyDeviceToDevice))                                        \
  X(cuMemcpy, CUresult, GPUSLACK_P_CU_DTOD, (dst, src, n), GPUSLACK_COPY, n,                              \
    copy_info(dptr(dst), dptr(src), n, cudaMemcpyDefault))                                               \
  X(cuMemcpy_ptds, CUresult, GPUSLACK_P_CU_DTOD, (dst, src, n), GPUSLACK_COPY, n,                         \
    copy_info(dptr(dst), dptr(src), n, cudaMemcpyDefault))                                               \
  X(cuMemcpyAsync, CUresult, GPUSLACK_P_CU_DTOD_ASYNC, (dst, src, n, s), GPUSLACK_COPY, n,                \
    copy_info(dptr(dst), dptr(src), n, cudaMemcpyDefault))                                               \
  X(cuMemcpyAsync_ptsz, CUresult, GPUSLACK_P_CU_DTOD_ASYNC, (dst, src, n, s), GPUSLACK_COPY, n,           \
    copy_info(dptr(dst), dptr(src), n, cudaMemcpyDefault))                                               \
  X(cuMemcpy2D_v2, CUresult, (const CUDA_MEMCPY2D* c), (c), GPUSLACK_COPY, memcpy_bytes(c),               \
    memcpy_info(c))                                                                                      \
  X(cuMemcpy2D_v2_ptds, CUresult, (const CUDA_MEMCPY2D* c), (c), GPUSLACK_COPY, memcpy_bytes(c),          \
    memcpy_info(c))                                                                                      \
  X(cuMemcpy2DAsync_v2, CUresult, (const CUDA_MEMCPY2D* c, CUstream s), (c, s), GPUSLACK_COPY,            \
    memcpy_bytes(c), memcpy_info(c))                                                                     \
  X(cuMemcpy2DAsync_v2_ptsz, CUresult, (const CUDA_MEMCPY2D* c, CUstream s), (c, s), GPUSLACK_COPY,       \
    memcpy_bytes(c), memcpy_info(c))                                                                     \
  X(cuMemcpy3D_v2, CUresult, (const CUDA_MEMCPY3D* c), (c), GPUSLACK_COPY, memcpy_bytes(c),               \
    memcpy_info(c))                                                                                      \
  X(cuMemcpy3D_v2_ptds, CUresult, (const CUDA_MEMCPY3D* c), (c), GPUSLACK_COPY, memcpy_bytes(c),          \
    memcpy_info(c))                                                                                      \
  X(cuMemcpy3DAsync_v2, CUresult, (const CUDA_MEMCPY3D* c, CUstream s), (c, s), GPUSLACK_COPY,            \
    memcpy_bytes(c), memcpy_info(c))                                                                     \
  X(cuMemcpy3DAsync_v2_ptsz, CUresult, (const CUDA_MEMCPY3D* c, CUstream s), (c, s), GPUSLACK_COPY,       \
    memcpy_bytes(c), memcpy_info(c))                                                                     \
  X(cuMemcpyPeer, CUresult, GPUSLACK_P_CU_PEER, (dst, dst_ctx, src, src_ctx, n), GPUSLACK_COPY, n,        \
    peer_info(n))                                                                                        \
  X(cuMemcpyPeer_ptds, CUresult, GPUSLACK_P_CU_PEER, (dst, dst_ctx, src, src_ctx, n), GPUSLACK_COPY, n,   \
    peer_info(n))                                                                                        \
  X(cuMemcpyPeerAsync, CUresult, GPUSLACK_P_CU_PEER_ASYNC, (dst, dst_ctx, src, src_ctx, n, s),            \
    GPUSLACK_COPY, n, peer_info(n))                                                                      \
  X(cuMemcpyPeerAsync_ptsz, CUresult, GPUSLACK_P_CU_PEER_ASYNC, (dst, dst_ctx, src, src_ctx, n, s),       \
    GPUSLACK_COPY, n, peer_info(n))                                                                      \
  X(cuMemsetD8_v2, CUresult, (CUdeviceptr p, unsigned char v, size_t n), (p, v, n), GPUSLACK_COPY, n,     \
    memset_info(n))                                                                                      \
  X(cuMemsetD8_v2_ptds, CUresult, (CUdeviceptr p, unsigned char v, size_t n), (p, v, n), GPUSLACK_COPY,   \
    n, memset_info(n))                                                                                   \
  X(cuMemsetD16_v2, CUresult, (CUdeviceptr p, unsigned short v, size_t n), (p, v, n), GPUSLACK_COPY,      \
    2 * n, memset_info(2 * n))                                                                           \
  X(cuMemsetD16_v2_ptds, CUresult, (CUdeviceptr p, unsigned short v, size_t n), (p, v, n),               \
    GPUSLACK_COPY, 2 * n, memset_info(2 * n))                                                            \
  X(cuMemsetD32_v2, CUresult, (CUdeviceptr p, unsigned int v, size_t n), (p, v, n), GPUSLACK_COPY,        \
    4 * n, memset_info(4 * n))                                                                           \
  X(cuMemsetD32_v2_ptds, CUresult, (CUdeviceptr p, unsigned int v, size_t n), (p, v, n), GPUSLACK_COPY,   \
    4 * n, memset_info(4 * n))                                                                           \
  X(cuMemsetD8Async, CUresult, (CUdeviceptr p, unsigned char v, size_t n, CUstream s), (p, v, n, s),     \
    GPUSLACK_COPY, n, memset_info(n))                                                                    \
  X(cuMemsetD8Async_ptsz, CUresult, (CUdeviceptr p, unsigned char v, size_t n, CUstream s), (p, v, n, s), \
    GPUSLACK_COPY, n, memset_info(n))                                                                    \
  X(cuMemsetD16Async, CUresult, (CUdeviceptr p, unsigned short v, size_t n, CUstream s), (p, v, n, s),   \
    GPUSLACK_COPY, 2 * n, memset_info(2 * n))                                                            \
  X(cuMemsetD16Async_ptsz, CUresult, (CUdeviceptr p, unsigned short v, size_t n, CUstream s),            \
    (p, v, n, s), GPUSLACK_COPY, 2 * n, memset_info(2 * n))                                              \
  X(cuMemsetD32Async, CUresult, (CUdeviceptr p, unsigned int v, size_t n, CUstream s), (p, v, n, s),     \
    GPUSLACK_COPY, 4 * n, memset_info(4 * n))                                                            \
  X(cuMemsetD32Async_ptsz, CUresult, (CUdeviceptr p, unsigned int v, size_t n, CUstream s),              \
    (p, v, n, s), GPUSLACK_COPY, 4 * n, memset_info(4 * n))                                              \
  /* ---- explicit synchronization ---- */                                                               \
  X(cuCtxSynchronize, CUresult, (void), (), GPUSLACK_SYNC, 0, CallInfo{})                                 \
  X(cuCtxSynchronize_v2, CUresult, (CUcontext ctx), (ctx), GPUSLACK_SYNC, 0, CallInfo{})                  \
  X(cuStreamSynchronize, CUresult, (CUstream s), (s), GPUSLACK_SYNC, 0, CallInfo{})                       \
  X(cuStreamSynchronize_ptsz, CUresult, (CUstream s), (s), GPUSLACK_SYNC, 0, CallInfo{})                  \
  X(cuEventSynchronize, CUresult, (CUevent e), (e), GPUSLACK_SYNC, 0, CallInfo{})                         \
  /* ---- stream lifetime ---- */                                                                        \
  X(cuStreamCreate, CUresult, (CUstream * s, unsigned int flags), (s, flags), GPUSLACK_OTHER, 0,         \
    CallInfo{})                                                                                          \
  X(cuStreamCreateWithPriority, CUresult, (CUstream * s, unsigned int flags, int priority),              \
    (s, flags, priority), GPUSLACK_OTHER, 0, CallInfo{})                                                 \
  X(cuStreamDestroy_v2, CUresult, (CUstream s), (s), GPUSLACK_OTHER, 0, CallInfo{})                     \
  /* ---- graph capture: the VMM allocator must know of every one (routes_streams.inc) ---- */          \
  X(cuStreamBeginCapture, CUresult, (CUstream s), (s), GPUSLACK_OTHER, 0, CallInfo{})                     \
  X(cuStreamBeginCapture_ptsz, CUresult, (CUstream s), (s), GPUSLACK_OTHER, 0, CallInfo{})                \
  X(cuStreamBeginCapture_v2, CUresult, (CUstream s, CUstreamCaptureMode mode), (s, mode), GPUSLACK_OTHER, \
    0, CallInfo{})                                                                                       \
  X(cuStreamBeginCapture_v2_ptsz, CUresult, (CUstream s, CUstreamCaptureMode mode), (s, mode),           \
    GPUSLACK_OTHER, 0, CallInfo{})                                                                       \
  X(cuStreamBeginCaptureToGraph, CUresult,                                                               \
    (CUstream s, CUgraph graph, const CUgraphNode* deps, const CUgraphEdgeData* edges, size_t n,         \
     CUstreamCaptureMode mode),                                                                          \
    (s, graph, deps, edges, n, mode), GPUSLACK_OTHER, 0, CallInfo{})                                     \
  X(cuStreamBeginCaptureToGraph_ptsz, CUresult,                                                          \
    (CUstream s, CUgraph graph, const CUgraphNode* deps, const CUgraphEdgeData* edges, size_t n,         \
     CUstreamCaptureMode mode),                                                                          \
    (s, graph, deps, edges, n, mode), GPUSLACK_OTHER, 0, CallInfo{})                                     \
  X(cuStreamEndCapture, CUresult, (CUstream s, CUgraph * graph), (s, graph), GPUSLACK_OTHER, 0,           \
    CallInfo{})                                                                                          \
  X(cuStreamEndCapture_ptsz, CUresult, (CUstream s, CUgraph * graph), (s, graph), GPUSLACK_OTHER, 0,      \
    CallInfo{})                                                                                          \
  /* ---- the range of a VMM allocator's block opened over IPC ---- */                      \
  X(cuMemGetAddressRange_v2, CUresult, (CUdeviceptr * base, size_t * size, CUdeviceptr p), (base, size, p), \
    GPUSLACK_OTHER, 0, CallInfo{})

// The counted driver rows: kernel launches (launch_hook_table.h says what a
// counted hook does). X(symbol, return type, (parameters), (arguments)).
#define GPUSLACK_P_CU_LAUNCH                                                                            \
  (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,   \
   unsigned int bz, unsigned int shared, CUstream s, void** params, void** extra)
#define GPUSLACK_A_CU_LAUNCH (f, gx, gy, gz, bx, by, bz, shared, s, params, extra)
#define GPUSLACK_DRIVER_COUNTED_HOOKS(X)                                                           \
  X(cuLaunchKernel, CUresult, GPUSLACK_P_CU_LAUNCH, GPUSLACK_A_CU_LAUNCH)                          \
  X(cuLaunchKernel_ptsz, CUresult, GPUSLACK_P_CU_LAUNCH, GPUSLACK_A_CU_LAUNCH)                     \
  X(cuLaunchKernelEx, CUresult, (const CUlaunchConfig* config, CUfunction f, void** params, void** extra), \
    (config, f, params, extra))                                                                    \
  X(cuLaunchKernelEx_ptsz, CUresult,                                                               \
    (const CUlaunchConfig* config, CUfunction f, void** params, void** extra), (config, f, params, extra))

// Which exported variant cuGetProcAddress(base, version, flags) hands out,
// for the hooked ones: V(base name, exported symbol, since, per_thread).
// The driver's rule (cuda.h, cuGetProcAddress; cudaTypedefs.h's
// PFN_<base>_v<version> typedefs name every ABI version): the symbol is the
// base name without version or per-thread suffix; the variant handed out is
// the newest whose CUDA version (`since`, cudaTypedefs.h's _vNNNN) is at
// most the requested cudaVersion; with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
// the per-thread variant (the _ptds/_ptsz typedefs, all since 7000) if there
// is one, else the legacy one. Older variants (cuMemAlloc of CUDA 2.0, with
// 32-bit device pointers) are not hooked: a request that resolves to one
// gets the driver's pointer unchanged. Every hooked symbol is the newest ABI
// of its base name in CUDA 13, except cuCtxSynchronize, whose _v2 (13000)
// is hooked too.
#define GPUSLACK_DRIVER_VERSIONS(V)                                          \
  V(cuMemAlloc, cuMemAlloc_v2, 3020, false)                                  \
  V(cuMemFree, cuMemFree_v2, 3020, false)                                    \
  V(cuMemAllocAsync, cuMemAllocAsync, 11020, false)                          \
  V(cuMemAllocAsync, cuMemAllocAsync_ptsz, 11020, true)                      \
  V(cuMemFreeAsync, cuMemFreeAsync, 11020, false)                            \
  V(cuMemFreeAsync, cuMemFreeAsync_ptsz, 11020, true)                        \
  V(cuMemAllocHost, cuMemAllocHost_v2, 3020, false)                          \
  V(cuMemHostAlloc, cuMemHostAlloc, 2020, false)                             \
  V(cuMemFreeHost, cuMemFreeHost, 2000, false)                               \
  V(cuMemHostRegister, cuMemHostRegister_v2, 6050, false)                    \
  V(cuMemHostUnregister, cuMemHostUnregister, 4000, false)                   \
  V(cuMemCreate, cuMemCreate, 10020, false)                                  \
  V(cuMemRelease, cuMemRelease, 10020, false)                                \
  V(cuMemMap, cuMemMap, 10020, false)                                        \
  V(cuMemUnmap, cuMemUnmap, 10020, false)                                    \
  V(cuMemSetAccess, cuMemSetAccess, 10020, false)                            \
  V(cuMemAddressReserve, cuMemAddressReserve, 10020, false)                  \
  V(cuMemAddressFree, cuMemAddressFree, 10020, false)                        \
  V(cuMemcpyHtoD, cuMemcpyHtoD_v2, 3020, false)                              \
  V(cuMemcpyHtoD, cuMemcpyHtoD_v2_ptds, 7000, true)                          \
  V(cuMemcpyDtoH, cuMemcpyDtoH_v2, 3020, false)                              \
  V(cuMemcpyDtoH, cuMemcpyDtoH_v2_ptds, 7000, true)                          \
  V(cuMemcpyDtoD, cuMemcpyDtoD_v2, 3020, false)                              \
  V(cuMemcpyDtoD, cuMemcpyDtoD_v2_ptds, 7000, true)                          \
  V(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, 3020, false)                    \
  V(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2_ptsz, 7000, true)                \
  V(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, 3020, false)                    \
  V(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2_ptsz, 7000, true)                \
  V(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, 3020, false)                    \
  V(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2_ptsz, 7000, true)                \
  V(cuMemcpy, cuMemcpy, 4000, false)                                         \
  V(cuMemcpy, cuMemcpy_ptds, 7000, true)                                     \
  V(cuMemcpyAsync, cuMemcpyAsync, 4000, false)                               \
  V(cuMemcpyAsync, cuMemcpyAsync_ptsz, 7000, true)                           \
  V(cuMemcpy2D, cuMemcpy2D_v2, 3020, false)                                  \
  V(cuMemcpy2D, cuMemcpy2D_v2_ptds, 7000, true)                              \
  V(cuMemcpy2DAsync, cuMemcpy2DAsync_v2, 3020, false)                        \
  V(cuMemcpy2DAsync, cuMemcpy2DAsync_v2_ptsz, 7000, true)                    \
  V(cuMemcpy3D, cuMemcpy3D_v2, 3020, false)                                  \
  V(cuMemcpy3D, cuMemcpy3D_v2_ptds, 7000, true)                              \
  V(cuMemcpy3DAsync, cuMemcpy3DAsync_v2, 3020, false)                        \
  V(cuMemcpy3DAsync, cuMemcpy3DAsync_v2_ptsz, 7000, true)                    \
  V(cuMemcpyPeer, cuMemcpyPeer, 4000, false)                                 \
  V(cuMemcpyPeer, cuMemcpyPeer_ptds, 7000, true)                             \
  V(cuMemcpyPeerAsync, cuMemcpyPeerAsync, 4000, false)                       \
  V(cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz, 7000, true)                   \
  V(cuMemsetD8, cuMemsetD8_v2, 3020, false)                                  \
  V(cuMemsetD8, cuMemsetD8_v2_ptds, 7000, true)                              \
  V(cuMemsetD16, cuMemsetD16_v2, 3020, false)                                \
  V(cuMemsetD16, cuMemsetD16_v2_ptds, 7000, true)                            \
  V(cuMemsetD32, cuMemsetD32_v2, 3020, false)                                \
  V(cuMemsetD32, cuMemsetD32_v2_ptds, 7000, true)                            \
  V(cuMemsetD8Async, cuMemsetD8Async, 3020, false)                           \
  V(cuMemsetD8Async, cuMemsetD8Async_ptsz, 7000, true)                       \
  V(cuMemsetD16Async, cuMemsetD16Async, 3020, false)                         \
  V(cuMemsetD16Async, cuMemsetD16Async_ptsz, 7000, true)                     \
  V(cuMemsetD32Async, cuMemsetD32Async, 3020, false)                         \
  V(cuMemsetD32Async, cuMemsetD32Async_ptsz, 7000, true)                     \
  V(cuCtxSynchronize, cuCtxSynchronize, 2000, false)                         \
  V(cuCtxSynchronize, cuCtxSynchronize_v2, 13000, false)                     \
  V(cuStreamSynchronize, cuStreamSynchronize, 2000, false)                   \
  V(cuStreamSynchronize, cuStreamSynchronize_ptsz, 7000, true)               \
  V(cuEventSynchronize, cuEventSynchronize, 2000, false)                     \
  V(cuStreamCreate, cuStreamCreate, 2000, false)                             \
  V(cuStreamCreateWithPriority, cuStreamCreateWithPriority, 5050, false)     \
  V(cuStreamDestroy, cuStreamDestroy_v2, 4000, false)                        \
  V(cuStreamBeginCapture, cuStreamBeginCapture, 10000, false)                \
  V(cuStreamBeginCapture, cuStreamBeginCapture_ptsz, 10000, true)            \
  V(cuStreamBeginCapture, cuStreamBeginCapture_v2, 10010, false)             \
  V(cuStreamBeginCapture, cuStreamBeginCapture_v2_ptsz, 10010, true)         \
  V(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph, 12030, false)  \
  V(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz, 12030, true) \
  V(cuStreamEndCapture, cuStreamEndCapture, 10000, false)                    \
  V(cuStreamEndCapture, cuStreamEndCapture_ptsz, 10000, true)                \
  V(cuMemGetAddressRange, cuMemGetAddressRange_v2, 3020, false)              \
  V(cuLaunchKernel, cuLaunchKernel, 4000, false)                             \
  V(cuLaunchKernel, cuLaunchKernel_ptsz, 7000, true)                         \
  V(cuLaunchKernelEx, cuLaunchKernelEx, 11060, false)                        \
  V(cuLaunchKernelEx, cuLaunchKernelEx_ptsz, 11060, true)
