// The hooked symbols: one table, from which interpose/hooks.cc generates
// every hook (DESIGN.md: interpose/ is the only place that knows symbol
// names; nothing here is hand-copied per symbol).
//
// Not to be included outside interpose/.
//
// A row: X(symbol, return type, (parameters), (arguments), category)
//   - symbol: the exported name, exactly as the real library exports it
//     (including the _ptsz/_ptds per-thread-default-stream variants);
//   - parameters/arguments: the real signature from the CUDA headers;
//   - category: what time blocked in the call counts as (Category below).
//
// Adding a symbol is adding a row. Later tables (NCCL, the driver API and
// the dlsym/cuGetProcAddress entry points) follow the same shape.
#pragma once

#include <cuda_runtime_api.h>

namespace gpuslack {
namespace interpose {

enum class Category {
  kAllocation,  // device or pinned alloc/free, with their implicit syncs
  kCopy,        // copies and memsets
  kSync,        // explicit synchronization: "waiting for the GPU"
  kStream,      // stream lifetime (not blocking; tracked for the allocator)
  kQuery,       // cheap queries
};

}  // namespace interpose
}  // namespace gpuslack

// The _ptsz/_ptds variants are declared by the headers only when a program
// is compiled for the per-thread default stream; declare them here.
extern "C" {
cudaError_t cudaMemcpy_ptds(void*, const void*, size_t, enum cudaMemcpyKind);
cudaError_t cudaMemcpyAsync_ptsz(void*, const void*, size_t, enum cudaMemcpyKind, cudaStream_t);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t);
}

#define GPUSLACK_RUNTIME_HOOKS(X)                                                              \
  X(cudaMalloc, cudaError_t, (void** p, size_t size), (p, size), Category::kAllocation)       \
  X(cudaFree, cudaError_t, (void* p), (p), Category::kAllocation)                             \
  X(cudaMallocHost, cudaError_t, (void** p, size_t size), (p, size), Category::kAllocation)   \
  X(cudaHostAlloc, cudaError_t, (void** p, size_t size, unsigned int flags), (p, size, flags), \
    Category::kAllocation)                                                                     \
  X(cudaFreeHost, cudaError_t, (void* p), (p), Category::kAllocation)                         \
  X(cudaMemcpy, cudaError_t, (void* dst, const void* src, size_t n, enum cudaMemcpyKind kind),  \
    (dst, src, n, kind), Category::kCopy)                                                      \
  X(cudaMemcpy_ptds, cudaError_t,                                                              \
    (void* dst, const void* src, size_t n, enum cudaMemcpyKind kind), (dst, src, n, kind),     \
    Category::kCopy)                                                                           \
  X(cudaMemcpyAsync, cudaError_t,                                                              \
    (void* dst, const void* src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s),          \
    (dst, src, n, kind, s), Category::kCopy)                                                   \
  X(cudaMemcpyAsync_ptsz, cudaError_t,                                                         \
    (void* dst, const void* src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s),          \
    (dst, src, n, kind, s), Category::kCopy)                                                   \
  X(cudaDeviceSynchronize, cudaError_t, (void), (), Category::kSync)                          \
  X(cudaStreamSynchronize, cudaError_t, (cudaStream_t s), (s), Category::kSync)               \
  X(cudaStreamSynchronize_ptsz, cudaError_t, (cudaStream_t s), (s), Category::kSync)
