// libcuda.so.1 of the simulated device: modules, kernels and the stream
// memory operations, and what PyTorch asks of the driver beyond them.
//
//   - modules (cuModuleLoad*, cuLink*) load nothing; their functions are
//     named handles; cuLaunchKernel and cuLaunchCooperativeKernel run busy
//     kernels timed by the cost model (launch_kernel in sim.h), never computed;
//   - function and kernel attributes, occupancy: constants of a 9.0 device;
//     cuTensorMapEncodeTiled fills an opaque map with zeros;
//   - cuMemsetD32Async and cuStreamWriteValue32 write device memory (host
//     memory here) in stream order: they are real, since later work may
//     wait on the values (PyTorch's expandable segments and its
//     synchronization of streams);
//   - cuPointerGetAttribute answers from the memory registry;
//   - green contexts and multicast objects are not supported by the
//     simulated device (CUDA_ERROR_NOT_SUPPORTED, as on a device without
//     them); cuLogsRegisterCallback accepts callbacks that are never called.
// What the driver cannot answer it logs (log_unanswered).
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "driver_internal.h"

using namespace gpusim;

struct CUmod_st {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<char>> functions;
};
struct CUlinkState_st {
  char cubin[16] = {};
};

namespace {

CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                unsigned shared, CUstream h) {
  READY();
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  uint64_t blocks = static_cast<uint64_t>(gx) * gy * gz;
  if (blocks == 0) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = resolve(h, false);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  // The launch's shape as CUPTI records it (registers: not known here).
  KernelShape k;
  k.grid[0] = gx, k.grid[1] = gy, k.grid[2] = gz;
  k.block[0] = bx, k.block[1] = by, k.block[2] = bz;
  k.dynamic_shared = shared;
  launch_kernel(s, k, f);
  return CUDA_SUCCESS;
}

int function_attribute(CUfunction_attribute a) {
  switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: return 32;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: return 90;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: return 90;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: return 48 << 10;
    default: return 0;
  }
}

bool device_range(CUdeviceptr p, size_t bytes) {
  return classify(reinterpret_cast<const void*>(p), bytes) == Where::kDevice;
}

}  // namespace

// ---- modules and linking ----
// A module loads "into the current context" (cuModuleLoadData): none is
// CUDA_ERROR_INVALID_CONTEXT.
GPUSIM_EXPORT CUresult cuModuleLoadData(CUmodule* m, const void* image) {
  READY_WITH_CONTEXT();
  if (!m || !image) return CUDA_ERROR_INVALID_VALUE;
  *m = new CUmod_st();
  return CUDA_SUCCESS;
}
// Note [Internal calls] (sim.h).
GPUSIM_INTERNAL_ALIAS(CUresult, cuModuleLoadData, (CUmodule* m, const void* image));
GPUSIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule* m, const void* image, unsigned n, CUjit_option* options,
                                          void** values) {
  (void)n, (void)options, (void)values;
  return gpusim_internal_cuModuleLoadData(m, image);
}
GPUSIM_EXPORT CUresult cuModuleLoad(CUmodule* m, const char* fname) {
  return gpusim_internal_cuModuleLoadData(m, fname);
}
GPUSIM_EXPORT CUresult cuModuleUnload(CUmodule m) {
  READY();
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  delete m;
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  READY();
  if (!f || !m || !name) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> l(m->mu);
  auto& slot = m->functions[name];
  if (!slot) {
    slot.reset(new char(0));
    register_kernel_name(slot.get(), name);
  }
  *f = reinterpret_cast<CUfunction>(slot.get());
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuLinkCreate(unsigned n, CUjit_option* options, void** values, CUlinkState* out) {
  READY();
  (void)n, (void)options, (void)values;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  *out = new CUlinkState_st();
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void* data, size_t size,
                                     const char* name, unsigned n, CUjit_option* options, void** values) {
  READY();
  (void)type, (void)size, (void)name, (void)n, (void)options, (void)values;
  if (!state || !data) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuLinkComplete(CUlinkState state, void** cubin, size_t* size) {
  READY();
  if (!state || !cubin || !size) return CUDA_ERROR_INVALID_VALUE;
  *cubin = state->cubin;  // an image cuModuleLoadData accepts
  *size = sizeof(state->cubin);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuLinkDestroy(CUlinkState state) {
  delete state;
  return CUDA_SUCCESS;
}

// ---- functions and launches ----
GPUSIM_EXPORT CUresult cuFuncGetAttribute(int* v, CUfunction_attribute a, CUfunction f) {
  READY();
  if (!v || !f) return CUDA_ERROR_INVALID_VALUE;
  *v = function_attribute(a);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuKernelGetAttribute(int* v, CUfunction_attribute a, CUkernel k, CUdevice d) {
  READY();
  if (!v || !k) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  *v = function_attribute(a);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int value) {
  READY();
  (void)a, (void)value;
  return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
GPUSIM_EXPORT CUresult cuFuncSetCacheConfig(CUfunction f, CUfunc_cache c) {
  READY();
  (void)c;
  return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
GPUSIM_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* n, CUfunction f, int block_size,
                                                                   size_t shared) {
  READY();
  (void)shared;
  if (!n || !f || block_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  int blocks = 2048 / block_size;
  *n = blocks < 1 ? 1 : (blocks > 32 ? 32 : blocks);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                      unsigned by, unsigned bz, unsigned shared, CUstream h, void** params,
                                      void** extra) {
  (void)params, (void)extra;
  return launch(f, gx, gy, gz, bx, by, bz, shared, h);
}
GPUSIM_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                                 unsigned by, unsigned bz, unsigned shared, CUstream h,
                                                 void** params) {
  (void)params;
  return launch(f, gx, gy, gz, bx, by, bz, shared, h);
}
GPUSIM_EXPORT CUresult cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank,
                                              void* address, const cuuint64_t* dims, const cuuint64_t* strides,
                                              const cuuint32_t* box, const cuuint32_t* element_strides,
                                              CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                              CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill fill) {
  (void)type, (void)address, (void)dims, (void)strides, (void)box, (void)element_strides;
  (void)interleave, (void)swizzle, (void)l2, (void)fill;
  if (!map || rank == 0 || rank > 5) return CUDA_ERROR_INVALID_VALUE;
  std::memset(map, 0, sizeof(*map));
  return CUDA_SUCCESS;
}

// ---- stream memory operations ----
GPUSIM_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t n, CUstream h) {
  READY();
  CUstream_st* s = resolve(h, false);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (n && !device_range(dst, n * 4)) return CUDA_ERROR_INVALID_VALUE;
  double us = config().copy_latency_us + transfer_us(n * 4, config().memset_gbps);
  auto* words = reinterpret_cast<uint32_t*>(dst);
  OpInfo info;
  info.kind = OpKind::kMemset;
  info.bytes = n * 4;
  info.memset_value = static_cast<uint8_t>(value);
  info.modeled_ns = static_cast<uint64_t>(us * 1000);
  enqueue(s, [words, value, n, us] {
    auto end = after(Clock::now(), us);
    for (size_t i = 0; i < n; ++i) words[i] = value;
    wait_until(end);
  }, info);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuStreamWriteValue32(CUstream h, CUdeviceptr addr, cuuint32_t value, unsigned flags) {
  READY();
  if (flags & ~static_cast<unsigned>(CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = resolve(h, false);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (addr % 4 || classify(reinterpret_cast<const void*>(addr), 4) == Where::kPageable)
    return CUDA_ERROR_INVALID_VALUE;
  auto* word = reinterpret_cast<volatile cuuint32_t*>(addr);
  enqueue(s, [word, value] { *word = value; });
  return CUDA_SUCCESS;
}

// ---- pointers ----
GPUSIM_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute a, CUdeviceptr p) {
  READY();
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  Region r;
  if (!Memory::get().find(reinterpret_cast<const void*>(p), 1, &r)) return CUDA_ERROR_INVALID_VALUE;
  bool device = r.kind == MemKind::kDevice || r.kind == MemKind::kDeviceAsync || r.kind == MemKind::kVmmReserve ||
                r.kind == MemKind::kManaged;
  switch (a) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) = device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      *static_cast<CUdeviceptr*>(data) = p;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = r.device;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<int*>(data) = r.kind == MemKind::kManaged;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = r.base;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = r.size;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<int*>(data) = 1;
      return CUDA_SUCCESS;
    default: {
      std::string what = "attribute " + std::to_string(static_cast<int>(a));
      log_unanswered("cuPointerGetAttribute", what.c_str());
      return CUDA_ERROR_NOT_SUPPORTED;
    }
  }
}

// ---- green contexts, multicast, logs: not on this device ----
GPUSIM_EXPORT CUresult cuDeviceGetDevResource(CUdevice d, CUdevResource* res, CUdevResourceType type) {
  READY();
  (void)res, (void)type;
  return valid_device(d) ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_DEVICE;
}
GPUSIM_EXPORT CUresult cuDevSmResourceSplitByCount(CUdevResource* result, unsigned* n, const CUdevResource* input,
                                                   CUdevResource* remaining, unsigned flags, unsigned min_count) {
  (void)result, (void)n, (void)input, (void)remaining, (void)flags, (void)min_count;
  return CUDA_ERROR_NOT_SUPPORTED;
}
GPUSIM_EXPORT CUresult cuDevResourceGenerateDesc(CUdevResourceDesc* desc, CUdevResource* res, unsigned n) {
  (void)desc, (void)res, (void)n;
  return CUDA_ERROR_NOT_SUPPORTED;
}
GPUSIM_EXPORT CUresult cuGreenCtxCreate(CUgreenCtx* ctx, CUdevResourceDesc desc, CUdevice d, unsigned flags) {
  (void)ctx, (void)desc, (void)d, (void)flags;
  return CUDA_ERROR_NOT_SUPPORTED;
}
GPUSIM_EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx ctx) {
  (void)ctx;
  return CUDA_ERROR_INVALID_HANDLE;
}
GPUSIM_EXPORT CUresult cuGreenCtxStreamCreate(CUstream* s, CUgreenCtx ctx, unsigned flags, int priority) {
  (void)s, (void)ctx, (void)flags, (void)priority;
  return CUDA_ERROR_INVALID_HANDLE;
}
GPUSIM_EXPORT CUresult cuCtxFromGreenCtx(CUcontext* ctx, CUgreenCtx green) {
  (void)ctx, (void)green;
  return CUDA_ERROR_INVALID_HANDLE;
}
GPUSIM_EXPORT CUresult cuMulticastCreate(CUmemGenericAllocationHandle* h, const CUmulticastObjectProp* prop) {
  READY();
  (void)h, (void)prop;
  return CUDA_ERROR_NOT_SUPPORTED;
}
GPUSIM_EXPORT CUresult cuMulticastAddDevice(CUmemGenericAllocationHandle h, CUdevice d) {
  (void)h, (void)d;
  return CUDA_ERROR_INVALID_HANDLE;
}
GPUSIM_EXPORT CUresult cuMulticastBindMem(CUmemGenericAllocationHandle mc, size_t mc_offset,
                                          CUmemGenericAllocationHandle mem, size_t mem_offset, size_t size,
                                          unsigned long long flags) {
  (void)mc, (void)mc_offset, (void)mem, (void)mem_offset, (void)size, (void)flags;
  return CUDA_ERROR_INVALID_HANDLE;
}
GPUSIM_EXPORT CUresult cuMulticastUnbind(CUmemGenericAllocationHandle mc, CUdevice d, size_t offset, size_t size) {
  (void)mc, (void)d, (void)offset, (void)size;
  return CUDA_ERROR_INVALID_HANDLE;
}
// Callbacks are accepted and never called: the simulated driver logs nothing.
GPUSIM_EXPORT CUresult cuLogsRegisterCallback(CUlogsCallback fn, void* user, CUlogsCallbackHandle* out) {
  (void)user;
  if (!fn || !out) return CUDA_ERROR_INVALID_VALUE;
  static std::atomic<uintptr_t> next{1};
  *out = reinterpret_cast<CUlogsCallbackHandle>(next.fetch_add(1));
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuLogsUnregisterCallback(CUlogsCallbackHandle h) {
  return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
