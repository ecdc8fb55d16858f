// Routes of pinned host memory: cudaMallocHost, cudaHostAlloc and
// cudaFreeHost to the caching pinned heap (pin/pinned_heap.h) when
// GPUSLACK_CONF's pin is on. routes.h has the list.
#pragma once

#include "cuda/fail.h"
#include "pin/process_heap.h"
#include "route.h"

namespace gpuslack {
namespace interpose {
namespace {

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
  return heap->free(p) ? cudaSuccess : cuda::fail(cudaErrorInvalidValue);
}

GPUSLACK_ROUTE(cudaMallocHost, MallocFn, routed_malloc_host)
GPUSLACK_ROUTE(cudaHostAlloc, HostAllocFn, routed_host_alloc)
GPUSLACK_ROUTE(cudaFreeHost, FreeFn, routed_free_host)

}  // namespace
}  // namespace interpose
}  // namespace gpuslack
