// The CUDA driver entry points gpuslack's core calls (the VMM allocator's
// primitives, and the context they run in: cuda/driver_context.h), found at
// run time in libcuda.so.1, never linked. Which of them need a current
// context: Note [gpuslack's own driver calls need a context].
//
// driver() loads the table once: the libcuda.so.1 already in the process if
// there is one (RTLD_NOLOAD), else dlopen("libcuda.so.1"), then cuInit(0).
// It returns nullptr when there is no driver, an entry point is missing, or
// cuInit fails; the reason is in why_no_driver(). Callers then fall back to
// the runtime's own allocation (pass-through).
//
// Thread safety: any thread; the table is immutable once published.
#pragma once

#include <cuda.h>

namespace gpuslack {
namespace cuda {

struct DriverApi {
  CUresult (*init)(unsigned int flags);
  CUresult (*device_get)(CUdevice* device, int ordinal);
  CUresult (*device_get_attribute)(int* value, CUdevice_attribute attribute, CUdevice device);
  CUresult (*mem_get_info)(size_t* free_bytes, size_t* total);
  CUresult (*mem_get_allocation_granularity)(size_t* granularity, const CUmemAllocationProp* prop,
                                             CUmemAllocationGranularity_flags option);
  CUresult (*mem_address_reserve)(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                  unsigned long long flags);
  CUresult (*mem_address_free)(CUdeviceptr ptr, size_t size);
  CUresult (*mem_create)(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                         unsigned long long flags);
  CUresult (*mem_release)(CUmemGenericAllocationHandle handle);
  CUresult (*mem_map)(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                      unsigned long long flags);
  CUresult (*mem_unmap)(CUdeviceptr ptr, size_t size);
  CUresult (*mem_set_access)(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count);
  // Which devices the process uses (the pinned heap fences frees on each).
  CUresult (*device_get_count)(int* count);
  CUresult (*primary_ctx_get_state)(CUdevice device, unsigned int* flags, int* active);
  // The allocation holding a device address (the staged copies check a
  // copy's whole device range: cuda/pointer_kind.h).
  CUresult (*mem_get_address_range)(CUdeviceptr* base, size_t* size, CUdeviceptr ptr);
  // Contexts (cuda/driver_context.h).
  CUresult (*ctx_get_current)(CUcontext* ctx);
  CUresult (*ctx_set_current)(CUcontext ctx);
  CUresult (*ctx_push_current)(CUcontext ctx);
  CUresult (*ctx_pop_current)(CUcontext* ctx);
  CUresult (*ctx_get_device)(CUdevice* device);
  CUresult (*primary_ctx_retain)(CUcontext* ctx, CUdevice device);
  CUresult (*primary_ctx_release)(CUdevice device);
  CUresult (*stream_get_ctx)(CUstream stream, CUcontext* ctx);
  // Optional (null when missing): the device's UUID, a MIG instance's own
  // on a MIG device (cuDeviceGetUuid_v2; health/sampler.h).
  CUresult (*device_get_uuid)(CUuuid* uuid, CUdevice device);
  // IPC of the VMM allocator's blocks (alloc/block_ipc.h).
  CUresult (*mem_export_to_shareable_handle)(void* shareable, CUmemGenericAllocationHandle handle,
                                             CUmemAllocationHandleType type, unsigned long long flags);
  CUresult (*mem_import_from_shareable_handle)(CUmemGenericAllocationHandle* handle, void* os_handle,
                                               CUmemAllocationHandleType type);
};

const DriverApi* driver();
// Why driver() is nullptr ("" while it is not).
const char* why_no_driver();

}  // namespace cuda
}  // namespace gpuslack
