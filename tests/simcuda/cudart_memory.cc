// libcudart.so.13 of the simulated device: allocation (device, stream
// ordered, managed, pitched), host memory (pinned, registered) and pointer
// attributes. Capacity accounting lives in Memory (memory.cc).
#include <cstddef>
#include <cstring>

#include "cudart_internal.h"

using namespace gpusim;
using namespace gpusim::rt;

namespace {

// ------------------------------------------------------------ allocation --

cudaError_t device_alloc(void** p, size_t size, MemKind kind, int device, double cost_us) {
  if (!p) return cudaErrorInvalidValue;
  *p = nullptr;
  if (size == 0) return cudaSuccess;
  size_t charged = round_up(size, kAlign);
  if (!Memory::get().reserve(device, charged)) return cudaErrorMemoryAllocation;
  void* mem = Memory::map_anonymous(size);
  if (!mem) {
    Memory::get().unreserve(device, charged);
    return cudaErrorMemoryAllocation;
  }
  charge(cost_us);
  Memory::get().add(Region(mem, size, kind, device, 0, charged));
  *p = mem;
  return cudaSuccess;
}

void release(const Region& r) {
  Memory::unmap(reinterpret_cast<void*>(r.base), r.size);
  if (r.charged) Memory::get().unreserve(r.device, r.charged);
}

cudaError_t host_alloc(void** p, size_t size, unsigned flags) {
  if (!p) return cudaErrorInvalidValue;
  *p = nullptr;
  if (cudaError_t e = refuse_in_capture()) return e;
  if (should_fail("cudaHostAlloc")) return cudaErrorMemoryAllocation;
  if (size == 0) return cudaSuccess;
  void* mem = Memory::map_anonymous(size);
  if (!mem) return cudaErrorMemoryAllocation;
  // Page-locking touches every page: that is where the cost comes from.
  charge(config().host_alloc_us + transfer_us(size, config().host_pin_gbps));
  device_barrier(current_device());
  Memory::get().add(Region(mem, size, MemKind::kPinned, current_device(), flags));
  *p = mem;
  return cudaSuccess;
}

cudaError_t malloc_async(void** p, size_t size, CUstream_st* s) {
  if (is_capturing(s)) {
    // Graph memory nodes are not simulated.
    invalidate_capture(s);
    return cudaErrorStreamCaptureUnsupported;
  }
  if (should_fail("cudaMallocAsync")) return cudaErrorMemoryAllocation;
  return device_alloc(p, size, MemKind::kDeviceAsync, s->device, config().malloc_async_us);
}

cudaError_t free_async(void* p, CUstream_st* s) {
  if (!p) return cudaSuccess;
  if (is_capturing(s)) {
    invalidate_capture(s);
    return cudaErrorStreamCaptureUnsupported;
  }
  Region r;
  if (!Memory::get().find_start(p, MemKind::kDeviceAsync, MemKind::kDeviceAsync, &r)) return cudaErrorInvalidValue;
  charge(config().malloc_async_us);
  // Stream-ordered: the memory goes back when the stream reaches the free.
  enqueue(s, [r] {
    if (Memory::get().remove(r.base, nullptr)) release(r);
  });
  return cudaSuccess;
}

cudaMemPool_t default_pool(int device) {
  return reinterpret_cast<cudaMemPool_t>(static_cast<uintptr_t>(0x1000 + device));
}

}  // namespace

// ---- device memory ----
GPUSIM_EXPORT cudaError_t cudaMalloc(void** p, size_t size) {
  READY();
  count_call(Counted::kCudaMalloc);
  if (!p) return ret(cudaErrorInvalidValue);
  *p = nullptr;
  if (cudaError_t e = refuse_in_capture()) return ret(e);
  if (should_fail("cudaMalloc")) return ret(cudaErrorMemoryAllocation);
  // A device allocation is an implicit synchronization point (Programming
  // Guide, "Implicit Synchronization": two commands from different streams
  // cannot run concurrently if a device memory allocation is issued between
  // them): an ordering point between streams, not a host wait, unless
  // GPUSIM_MALLOC_SYNC=1 makes it wait for the device to go idle.
  if (config().malloc_syncs) sync_device(current_device());
  else device_barrier(current_device());
  double gib = static_cast<double>(size) / (1ull << 30);
  return ret(device_alloc(p, size, MemKind::kDevice, current_device(),
                          config().malloc_us + gib * config().malloc_per_gib_us));
}
GPUSIM_INTERNAL_ALIAS(cudaError_t, cudaMalloc, (void** p, size_t size));
GPUSIM_EXPORT cudaError_t cudaFree(void* p) {
  READY();
  if (!p) return cudaSuccess;
  count_call(Counted::kCudaFree);
  if (cudaError_t e = refuse_in_capture()) return ret(e);
  Region r;
  if (!Memory::get().find_start(p, MemKind::kDevice, MemKind::kManaged, &r)) return ret(cudaErrorInvalidValue);
  // Memory opened from another process's IPC handle is released only by
  // cudaIpcCloseMemHandle (cudart_ipc.cc).
  if (r.flags & kRegionIpcImported) return ret(cudaErrorInvalidValue);
  // cudaFree waits for the whole device: queued work may still use `p`.
  sync_device(r.device);
  count_free_sync();
  charge(config().free_us);
  Memory::get().remove(r.base, nullptr);
  ipc_forget_export(r.base);
  release(r);
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaMallocManaged(void** p, size_t size, unsigned flags) {
  READY();
  (void)flags;
  if (cudaError_t e = refuse_in_capture()) return ret(e);
  return ret(device_alloc(p, size, MemKind::kManaged, current_device(), config().malloc_us));
}
GPUSIM_EXPORT cudaError_t cudaMallocPitch(void** p, size_t* pitch, size_t width, size_t height) {
  if (!pitch) return ret(cudaErrorInvalidValue);
  *pitch = round_up(width ? width : 1, kAlign);
  return gpusim_internal_cudaMalloc(p, *pitch * height);  // Note [Internal calls]
}
GPUSIM_INTERNAL_ALIAS(cudaError_t, cudaMallocPitch, (void** p, size_t* pitch, size_t width, size_t height));
GPUSIM_EXPORT cudaError_t cudaMalloc3D(cudaPitchedPtr* pp, cudaExtent ext) {
  if (!pp) return ret(cudaErrorInvalidValue);
  size_t pitch = 0;
  void* p = nullptr;
  cudaError_t e = gpusim_internal_cudaMallocPitch(&p, &pitch, ext.width, ext.height * ext.depth);
  if (e != cudaSuccess) return e;
  pp->ptr = p;
  pp->pitch = pitch;
  pp->xsize = ext.width;
  pp->ysize = ext.height;
  return cudaSuccess;
}
#define GPUSIM_ARGS_cudaMallocAsync p, size, h
GPUSIM_BOTH(cudaError_t, cudaMallocAsync, (void** p, size_t size, cudaStream_t h), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  return ret(malloc_async(p, size, s));
})
#define GPUSIM_ARGS_cudaMallocFromPoolAsync p, size, pool, h
GPUSIM_BOTH(cudaError_t, cudaMallocFromPoolAsync, (void** p, size_t size, cudaMemPool_t pool, cudaStream_t h),
            _ptsz, {
  READY();
  STREAM(s, h, ptds);
  if (pool != default_pool(s->device)) return ret(cudaErrorInvalidValue);
  return ret(malloc_async(p, size, s));
})
#define GPUSIM_ARGS_cudaFreeAsync p, h
GPUSIM_BOTH(cudaError_t, cudaFreeAsync, (void* p, cudaStream_t h), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  return ret(free_async(p, s));
})
GPUSIM_EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int d) {
  READY();
  if (!pool) return ret(cudaErrorInvalidValue);
  if (!valid_device(d)) return ret(cudaErrorInvalidDevice);
  *pool = default_pool(d);
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  READY();
  size_t cap = config().device_bytes, used = Memory::get().used(current_device());
  if (free_bytes) *free_bytes = used < cap ? cap - used : 0;
  if (total) *total = cap;
  return cudaSuccess;
}

// ---- host memory ----
GPUSIM_EXPORT cudaError_t cudaHostAlloc(void** p, size_t size, unsigned flags) {
  READY();
  return ret(host_alloc(p, size, flags));
}
GPUSIM_EXPORT cudaError_t cudaMallocHost(void** p, size_t size) {
  READY();
  return ret(host_alloc(p, size, cudaHostAllocDefault));
}
GPUSIM_EXPORT cudaError_t cudaFreeHost(void* p) {
  READY();
  if (!p) return cudaSuccess;
  if (cudaError_t e = refuse_in_capture()) return ret(e);
  Region r;
  if (!Memory::get().find_start(p, MemKind::kPinned, MemKind::kPinned, &r)) return ret(cudaErrorInvalidValue);
  // Like cudaFree, cudaFreeHost waits for the device.
  sync_device(r.device);
  charge(config().free_host_us);
  Memory::get().remove(r.base, nullptr);
  release(r);
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaHostRegister(void* p, size_t size, unsigned flags) {
  READY();
  if (!p || size == 0) return ret(cudaErrorInvalidValue);
  Region existing;
  if (Memory::get().find(p, 1, &existing)) return ret(cudaErrorHostMemoryAlreadyRegistered);
  charge(config().host_alloc_us + transfer_us(size, config().host_pin_gbps));
  Memory::get().add(Region(p, size, MemKind::kRegistered, current_device(), flags));
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaHostUnregister(void* p) {
  READY();
  Region r;
  if (!Memory::get().find_start(p, MemKind::kRegistered, MemKind::kRegistered, &r))
    return ret(cudaErrorHostMemoryNotRegistered);
  sync_device(r.device);
  Memory::get().remove(r.base, nullptr);
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaHostGetDevicePointer(void** dev, void* host, unsigned flags) {
  READY();
  (void)flags;
  if (!dev || classify(host, 1) != Where::kPinned) return ret(cudaErrorInvalidValue);
  *dev = host;  // unified addressing: the same address
  return cudaSuccess;
}
// The flags a pinned allocation was made with (registered memory: its
// registration flags), for any address inside it.
GPUSIM_EXPORT cudaError_t cudaHostGetFlags(unsigned* flags, void* host) {
  READY();
  Region r;
  if (!flags || !Memory::get().find(host, 1, &r) || (r.kind != MemKind::kPinned && r.kind != MemKind::kRegistered))
    return ret(cudaErrorInvalidValue);
  *flags = r.flags;
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  READY();
  if (!a) return ret(cudaErrorInvalidValue);
#ifdef GPUSIM_CUDA12
  // CUDA 12's struct ends where CUDA 13 appended its reserved words.
  std::memset(a, 0, offsetof(cudaPointerAttributes, reserved));
#else
  std::memset(a, 0, sizeof(*a));
#endif
  Region r;
  if (!Memory::get().find(p, 1, &r)) {
    a->type = cudaMemoryTypeUnregistered;
    a->device = cudaInvalidDeviceId;
    return cudaSuccess;
  }
  a->device = r.device;
  switch (r.kind) {
    case MemKind::kDevice:
    case MemKind::kDeviceAsync:
    case MemKind::kVmmReserve:
      a->type = cudaMemoryTypeDevice;
      a->devicePointer = const_cast<void*>(p);
      break;
    case MemKind::kManaged:
      a->type = cudaMemoryTypeManaged;
      a->devicePointer = a->hostPointer = const_cast<void*>(p);
      break;
    case MemKind::kPinned:
    case MemKind::kRegistered:
      a->type = cudaMemoryTypeHost;
      a->devicePointer = a->hostPointer = const_cast<void*>(p);
      break;
  }
  return cudaSuccess;
}

// IPC handles of cudaMalloc memory: cudart_ipc.cc.
