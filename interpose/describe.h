// What a hooked call moved or allocated, from its arguments: the `info`
// column of hook_table.h. Evaluated after a successful call, outside the
// timed region (a copy may look its pointers up: cuda/pointer_kind.h).
//
// Not to be included outside interpose/.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "cuda/pointer_kind.h"
#include "ledger/api_call.h"

namespace gpuslack {
namespace interpose {

inline CallInfo alloc_info(size_t bytes) {
  CallInfo i;
  i.bytes = bytes;
  i.changes_memory = true;
  return i;
}

inline CallInfo free_info(const void* p) {
  CallInfo i;
  i.changes_memory = p != nullptr;
  return i;
}

inline HostMemory host_memory_of(const void* p) {
  switch (cuda::pointer_kind(p)) {
    case cuda::PointerKind::kPinnedHost: return HostMemory::kPinned;
    case cuda::PointerKind::kPageableHost: return HostMemory::kPageable;
    default: return HostMemory::kNone;
  }
}

inline bool on_device(cuda::PointerKind k) {
  return k == cuda::PointerKind::kDevice || k == cuda::PointerKind::kManaged;
}

inline CallInfo copy_info(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  CallInfo i;
  i.bytes = bytes;
  switch (kind) {
    case cudaMemcpyHostToDevice:
      i.copy = CopyKind::kHostToDevice;
      i.host = host_memory_of(src);
      break;
    case cudaMemcpyDeviceToHost:
      i.copy = CopyKind::kDeviceToHost;
      i.host = host_memory_of(dst);
      break;
    case cudaMemcpyDeviceToDevice:
      i.copy = CopyKind::kDeviceToDevice;
      break;
    case cudaMemcpyHostToHost:
      i.copy = CopyKind::kHostToHost;
      i.host = host_memory_of(src);
      break;
    default: {  // cudaMemcpyDefault: the pointers say
      cuda::PointerKind s = cuda::pointer_kind(src), d = cuda::pointer_kind(dst);
      bool sd = on_device(s), dd = on_device(d);
      i.copy = sd && dd ? CopyKind::kDeviceToDevice
               : sd     ? CopyKind::kDeviceToHost
               : dd     ? CopyKind::kHostToDevice
                        : CopyKind::kHostToHost;
      const void* host = i.copy == CopyKind::kDeviceToHost ? dst : src;
      if (i.copy != CopyKind::kDeviceToDevice) i.host = host_memory_of(host);
      break;
    }
  }
  return i;
}

inline CallInfo peer_info(size_t bytes) {
  CallInfo i;
  i.bytes = bytes;
  i.copy = CopyKind::kPeer;
  return i;
}

inline CallInfo memset_info(size_t bytes) {
  CallInfo i;
  i.bytes = bytes;
  i.copy = CopyKind::kMemset;
  return i;
}

inline size_t batch_bytes(const size_t* sizes, size_t count) {
  size_t total = 0;
  for (size_t k = 0; sizes && k < count; ++k) total += sizes[k];
  return total;
}

// A batch is counted as one call, classified by its first copy.
inline CallInfo batch_info(void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count) {
  if (!dsts || !srcs || !sizes || count == 0) return CallInfo{};
  CallInfo i = copy_info(dsts[0], srcs[0], 0, cudaMemcpyDefault);
  i.bytes = batch_bytes(sizes, count);
  return i;
}

// ---- the driver API's rows (driver_hook_table.h) ----

// A driver device pointer as an address.
inline void* dptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

// Another allocator's VMM traffic: the bytes mapped, unmapped or granted
// (the ledger counts the calls: unmaps, releases); mappings change what
// an address is.
inline CallInfo vmm_info(size_t bytes) {
  CallInfo i;
  i.bytes = bytes;
  i.changes_memory = true;
  return i;
}

// An address range reserved or freed: no memory behind it.
inline CallInfo reserve_info(size_t bytes) {
  CallInfo i;
  i.bytes = bytes;
  return i;
}

// The bytes of a 2D (CUDA_MEMCPY2D) or 3D (CUDA_MEMCPY3D) driver copy.
inline size_t memcpy_bytes(const CUDA_MEMCPY2D* c) { return c ? c->WidthInBytes * c->Height : 0; }
inline size_t memcpy_bytes(const CUDA_MEMCPY3D* c) {
  return c ? c->WidthInBytes * c->Height * (c->Depth ? c->Depth : 1) : 0;
}

// One side of a driver copy descriptor: the pointer it names, and whether it
// is on the device (arrays are).
struct CopySide {
  const void* pointer;
  bool on_device;
};
inline CopySide copy_side(CUmemorytype type, const void* host, CUdeviceptr device) {
  switch (type) {
    case CU_MEMORYTYPE_HOST: return {host, false};
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_ARRAY: return {dptr(device), true};
    default: return {dptr(device), on_device(cuda::pointer_kind(dptr(device)))};  // unified: the pointer says
  }
}

// A 2D or 3D driver copy, classified by its descriptor's memory types.
template <typename Desc>
CallInfo memcpy_info(const Desc* c) {
  if (!c) return CallInfo{};
  CopySide s = copy_side(c->srcMemoryType, c->srcHost, c->srcDevice);
  CopySide d = copy_side(c->dstMemoryType, c->dstHost, c->dstDevice);
  CallInfo i;
  i.bytes = memcpy_bytes(c);
  i.copy = s.on_device && d.on_device ? CopyKind::kDeviceToDevice
           : s.on_device              ? CopyKind::kDeviceToHost
           : d.on_device              ? CopyKind::kHostToDevice
                                      : CopyKind::kHostToHost;
  if (i.copy != CopyKind::kDeviceToDevice)
    i.host = host_memory_of(i.copy == CopyKind::kDeviceToHost ? d.pointer : s.pointer);
  return i;
}

}  // namespace interpose
}  // namespace gpuslack
