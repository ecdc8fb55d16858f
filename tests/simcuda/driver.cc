// libcuda.so.1 of the simulated device: the CUDA Driver API entry points
// gpuslack and its tests use, exported unversioned as the real library does
// (driver.map). cuda.h #defines several names to versioned ones
// (cuMemGetInfo -> cuMemGetInfo_v2, ...), so the definitions below of the
// plain names define the versioned symbols, as in the real driver.
//
// This file: errors, initialization, devices, contexts, cuMemGetInfo and
// cuGetProcAddress. Virtual memory management (cuMemCreate / cuMemMap / ...)
// is in driver_vmm.cc.
// What is and is not simulated: README.md, "Driver API (libcuda.so.1)".
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "driver_internal.h"

using namespace gpusim;

// A context: the simulated device has only primary contexts, one per device.
struct CUctx_st {
  int device = 0;
  std::atomic<int> retained{0};
};

namespace {

std::atomic<bool> g_initialized{false};

// ------------------------------------------------------------- contexts ---
//
// Note [A thread has no context until one is bound]: as in the real driver,
// a thread starts with an empty context stack (cuCtxGetCurrent gives NULL)
// and the current context is the top of it: cuCtxSetCurrent replaces the
// top (pushes onto an empty stack; NULL pops), cuCtxPushCurrent pushes,
// cuCtxPopCurrent pops (CUDA Driver API, Context Management). Only the
// runtime (cudart.cc, on its first call that needs a context, and on
// cudaSetDevice) or the application binds one. Each change of the current
// context moves the core's current device (sim.h) to the context's, so the
// runtime's calls on this thread act on that device, as the CUDA Runtime
// API's "Interactions with the CUDA Driver API" says they do.

CUctx_st* primary(int device) {
  static CUctx_st* ctxs = [] {
    int n = config().device_count > 0 ? config().device_count : 1;
    auto* c = new CUctx_st[n];  // never destroyed: contexts outlive main()
    for (int i = 0; i < n; ++i) c[i].device = i;
    return c;
  }();
  return &ctxs[device];
}

bool valid_ctx(CUcontext c) {
  for (int d = 0; d < config().device_count; ++d)
    if (c == primary(d)) return true;
  return false;
}

// The calling thread's context stack; its top is the current context.
// Plain storage, no destructor: the runtime asks for the current context in
// every call, including calls made while the process exits, after a
// thread's thread_local objects were destroyed. Deeper than kMaxDepth, a
// push fails with CUDA_ERROR_OUT_OF_MEMORY (the real driver states no
// limit).
constexpr int kMaxDepth = 64;
struct ContextStack {
  CUctx_st* at[kMaxDepth];
  int depth;
  bool empty() const { return depth == 0; }
  CUctx_st*& top() { return at[depth - 1]; }
  bool push(CUctx_st* c) {
    if (depth == kMaxDepth) return false;
    at[depth++] = c;
    return true;
  }
  void pop() { --depth; }
};
thread_local ContextStack t_ctx_stack{};

CUctx_st* current_ctx() { return t_ctx_stack.empty() ? nullptr : t_ctx_stack.top(); }

// After the stack changed: the runtime's device follows the new current
// context (with none, the thread keeps the device it had).
void follow_current() {
  if (CUctx_st* c = current_ctx()) set_current_device(c->device);
}

// An explicit context, or the current one for NULL (the _v2 context calls).
CUresult ctx_or_current(CUcontext c, CUctx_st** out) {
  if (!c) c = current_ctx();
  if (!c || !valid_ctx(c)) return CUDA_ERROR_INVALID_CONTEXT;
  *out = c;
  return CUDA_SUCCESS;
}

// ------------------------------------------------------- cuGetProcAddress ---

void anchor() {}

// `name` among this library's own exports (not an interposer's): those of
// every source of libcuda.so.1, driver_vmm.cc's included.
void* own_symbol(const char* name) {
  struct Self {
    void* handle = nullptr;
    void* base = nullptr;
  };
  static const Self* self = [] {
    auto* s = new Self();
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&anchor), &info) && info.dli_fname) {
      s->base = info.dli_fbase;
      s->handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    }
    return s;
  }();
  if (!self->handle || std::strncmp(name, "cu", 2) != 0) return nullptr;
  void* f = dlsym(self->handle, name);
  Dl_info info;
  if (!f || !dladdr(f, &info) || info.dli_fbase != self->base) return nullptr;
  return f;
}

// Base names whose current ABI is a versioned symbol, and the CUDA version
// from which the driver hands out that version.
struct Versioned {
  const char* base;
  const char* symbol;
  int since;
};
constexpr Versioned kVersioned[] = {
    {"cuDeviceTotalMem", "cuDeviceTotalMem_v2", 3020},
    {"cuMemGetInfo", "cuMemGetInfo_v2", 3020},
    {"cuMemGetAddressRange", "cuMemGetAddressRange_v2", 3020},
    {"cuCtxDestroy", "cuCtxDestroy_v2", 4000},
    {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2", 11000},
    {"cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2", 11000},
    {"cuDevicePrimaryCtxSetFlags", "cuDevicePrimaryCtxSetFlags_v2", 11000},
    {"cuDeviceGetUuid", "cuDeviceGetUuid_v2", 11040},
    {"cuGetProcAddress", "cuGetProcAddress_v2", 12000},
    {"cuCtxPushCurrent", "cuCtxPushCurrent_v2", 4000},
    {"cuCtxPopCurrent", "cuCtxPopCurrent_v2", 4000},
    {"cuLinkCreate", "cuLinkCreate_v2", 6050},
    {"cuLinkAddData", "cuLinkAddData_v2", 6050},
    {"cuStreamWriteValue32", "cuStreamWriteValue32_v2", 12000},
    // driver_memory.cc's (cudaTypedefs.h's PFN_<base>_v<version>)
    {"cuMemAlloc", "cuMemAlloc_v2", 3020},
    {"cuMemFree", "cuMemFree_v2", 3020},
    {"cuMemAllocHost", "cuMemAllocHost_v2", 3020},
    {"cuMemHostRegister", "cuMemHostRegister_v2", 6050},
    {"cuMemcpyHtoD", "cuMemcpyHtoD_v2", 3020},
    {"cuMemcpyDtoH", "cuMemcpyDtoH_v2", 3020},
    {"cuMemcpyDtoD", "cuMemcpyDtoD_v2", 3020},
    {"cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2", 3020},
    {"cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2", 3020},
    {"cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync_v2", 3020},
    {"cuMemcpy2D", "cuMemcpy2D_v2", 3020},
    {"cuMemcpy2DAsync", "cuMemcpy2DAsync_v2", 3020},
    {"cuMemcpy3D", "cuMemcpy3D_v2", 3020},
    {"cuMemcpy3DAsync", "cuMemcpy3DAsync_v2", 3020},
    {"cuMemsetD8", "cuMemsetD8_v2", 3020},
    {"cuMemsetD16", "cuMemsetD16_v2", 3020},
    {"cuMemsetD32", "cuMemsetD32_v2", 3020},
    {"cuStreamDestroy", "cuStreamDestroy_v2", 4000},
    {"cuEventDestroy", "cuEventDestroy_v2", 4000},
    {"cuCtxSynchronize", "cuCtxSynchronize_v2", 13000},
    // driver_capture.cc's
    {"cuStreamBeginCapture", "cuStreamBeginCapture_v2", 10010},
};

// The exported name cuGetProcAddress resolves `symbol` to, if this library
// has it: the newest versioned name the version allows, else the base name;
// with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (from CUDA 7.0) its
// _ptds or _ptsz variant where there is one.
void* lookup(const char* symbol, int cuda_version, bool per_thread) {
  const char* name = symbol;
  for (const Versioned& v : kVersioned) {
    if (std::strcmp(v.base, symbol) != 0 || cuda_version < v.since || !own_symbol(v.symbol)) continue;
    name = v.symbol;
    break;
  }
  if (per_thread && cuda_version >= 7000) {
    for (const char* suffix : {"_ptds", "_ptsz"}) {
      char variant[128];
      if (std::snprintf(variant, sizeof(variant), "%s%s", name, suffix) >= static_cast<int>(sizeof(variant))) break;
      if (void* f = own_symbol(variant)) return f;
    }
  }
  return own_symbol(name);
}

// GPUSIM_WRAP_ENTRY_POINT=cuMemAlloc: cuGetProcAddress hands out, for
// cuMemAlloc, a function of its own that calls cuMemAlloc_v2, as a tool
// that wraps the driver's entry points does (interposers must pass it on
// unchanged: gpuslack's Note [Only the function the hook forwards to]).
// Read on every lookup, so that one test process can set and clear it.
CUresult wrapped_mem_alloc(CUdeviceptr* p, size_t bytes) {
  static volatile int calls = 0;  // not folded into cuMemAlloc_v2 itself
  calls = calls + 1;
  return cuMemAlloc_v2(p, bytes);
}
void* wrapper_of(const char* symbol) {
  const char* wrap = std::getenv("GPUSIM_WRAP_ENTRY_POINT");
  if (!wrap || std::strcmp(wrap, symbol) != 0 || std::strcmp(symbol, "cuMemAlloc") != 0) return nullptr;
  return reinterpret_cast<void*>(&wrapped_mem_alloc);
}

}  // namespace

CUresult gpusim::drv::ready() {
  if (config().no_driver || !g_initialized.load(std::memory_order_acquire)) return CUDA_ERROR_NOT_INITIALIZED;
  if (runtime_torn_down()) {  // sim.h, "The CUDA runtime's teardown"
    static const bool check = [] {
      const char* v = std::getenv("GPUSIM_CHECK_TEARDOWN");
      return v && std::strcmp(v, "1") == 0;
    }();
    static std::atomic<bool> said{false};
    if (check && !said.exchange(true))
      std::fprintf(stderr, "gpusim: a driver call after the CUDA runtime's teardown (undefined behavior)\n");
  }
  return CUDA_SUCCESS;
}

CUresult gpusim::drv::ready_with_context() {
  if (CUresult r = ready()) return r;
  return current_ctx() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

// ======================================================================
// Exported entry points
// ======================================================================

// ---- errors, initialization and versions ----
GPUSIM_EXPORT CUresult cuGetErrorName(CUresult e, const char** s) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  switch (e) {
#define NAME(x) case x: *s = #x; return CUDA_SUCCESS;
    NAME(CUDA_SUCCESS) NAME(CUDA_ERROR_INVALID_VALUE) NAME(CUDA_ERROR_OUT_OF_MEMORY)
    NAME(CUDA_ERROR_NOT_INITIALIZED) NAME(CUDA_ERROR_DEINITIALIZED) NAME(CUDA_ERROR_NO_DEVICE)
    NAME(CUDA_ERROR_INVALID_DEVICE) NAME(CUDA_ERROR_INVALID_CONTEXT) NAME(CUDA_ERROR_INVALID_HANDLE)
    NAME(CUDA_ERROR_NOT_FOUND) NAME(CUDA_ERROR_NOT_READY) NAME(CUDA_ERROR_NOT_PERMITTED)
    NAME(CUDA_ERROR_NOT_SUPPORTED) NAME(CUDA_ERROR_ILLEGAL_STATE) NAME(CUDA_ERROR_UNKNOWN)
#undef NAME
    default: *s = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
}
GPUSIM_EXPORT CUresult cuGetErrorString(CUresult e, const char** s) { return cuGetErrorName(e, s); }

namespace {

// The driver's tool injection, once, at the first successful cuInit: the
// library CUDA_INJECTION64_PATH names is loaded and its InitializeInjection
// called, before cuInit returns (the injection the CUPTI samples' injection
// tools and Kineto's InitializeInjection are written for: "The cuda driver
// calls this function if the CUDA_INJECTION64_PATH environment variable is
// set"). Nsight Systems and Nsight Compute attach the same way. A library
// that cannot be loaded, or has no InitializeInjection, is said once and
// skipped.
void inject_tool() {
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  if (!path || !*path) return;
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  auto init = h ? reinterpret_cast<int (*)()>(dlsym(h, "InitializeInjection")) : nullptr;
  if (!init) {
    std::fprintf(stderr, "gpusim: CUDA_INJECTION64_PATH %s: %s\n", path, h ? "no InitializeInjection" : dlerror());
    return;
  }
  init();
}

}  // namespace

GPUSIM_EXPORT CUresult cuInit(unsigned int flags) {
  if (flags) return CUDA_ERROR_INVALID_VALUE;
  if (config().no_driver) return CUDA_ERROR_NOT_INITIALIZED;
  if (config().device_count == 0) return CUDA_ERROR_NO_DEVICE;
  static std::once_flag injected;
  std::call_once(injected, inject_tool);
  g_initialized.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

// Works before cuInit, as the real one does; with GPUSIM_NO_DRIVER it
// reports version 0 and fails, as cudaDriverGetVersion reports 0.
GPUSIM_EXPORT CUresult cuDriverGetVersion(int* v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  if (config().no_driver) {
    *v = 0;
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  *v = CUDA_VERSION;
  return CUDA_SUCCESS;
}

// cuGetProcAddress_v2. Works before cuInit (the runtime resolves cuInit
// itself through it). Returns this library's own definition even when an
// interposer defines the same name.
GPUSIM_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                                        CUdriverProcAddressQueryResult* status) {
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  if (flags & ~static_cast<cuuint64_t>(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                                       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
    return CUDA_ERROR_INVALID_VALUE;
  void* f = wrapper_of(symbol);
  if (!f) f = lookup(symbol, cuda_version, flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  if (!f) {
    log_unanswered("cuGetProcAddress", symbol);
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = f;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

// ---- devices ----
GPUSIM_EXPORT CUresult cuDeviceGetCount(int* n) {
  READY();
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *n = config().device_count;
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  READY();
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
  READY();
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<size_t>(len), "gpusim simulated device %d", d);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice d) {
  READY();
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  std::memset(uuid->bytes, 0, sizeof(uuid->bytes));
  std::memcpy(uuid->bytes, "gpusim", 6);
  uuid->bytes[15] = static_cast<char>(d);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuDeviceTotalMem(size_t* bytes, CUdevice d) {
  READY();
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = config().device_bytes;
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuDeviceGetAttribute(int* v, CUdevice_attribute attr, CUdevice d) {
  READY();
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  switch (attr) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    // Launch limits: as cudaGetDeviceProperties reports them (cudart.cc).
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 0x7fffffff; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 << 10; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 227 << 10; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = 228 << 10; break;
    // Programming Guide, "Compute Capabilities", 9.0: 1 KB per block reserved.
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *v = 1 << 10; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 50 << 20; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *v = 2; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *v = config().no_vmm ? 0 : 1; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: *v = config().no_vmm ? 0 : 1; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED: *v = !config().no_vmm && config().fabric_handles; break;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED: *v = config().no_vmm ? 0 : 1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *v = d; break;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: *v = -1; break;
    default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}

// ---- contexts ----
GPUSIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice d) {
  READY();
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  CUctx_st* c = primary(d);
  c->retained.fetch_add(1);
  *ctx = c;
  return CUDA_SUCCESS;
}
// cuDevicePrimaryCtxRelease_v2. Dropping the last reference does not tear
// down the device's memory or streams (not simulated).
GPUSIM_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice d) {
  READY();
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  std::atomic<int>& n = primary(d)->retained;
  int cur = n.load();
  do {
    if (cur <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  } while (!n.compare_exchange_weak(cur, cur - 1));
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned int* flags, int* active) {
  READY();
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  *flags = 0;
  *active = primary(d)->retained.load() > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}
// cuDevicePrimaryCtxReset_v2: "Resetting the primary context does not
// release it". The device's work is waited for; its memory and streams
// are not torn down (not simulated), and the context stays current on the
// threads it is current on.
GPUSIM_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice d) {
  READY();
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  sync_device(d);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  READY();
  if (!ctx) {
    if (!t_ctx_stack.empty()) t_ctx_stack.pop();
    follow_current();
    return CUDA_SUCCESS;
  }
  if (!valid_ctx(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (t_ctx_stack.empty()) t_ctx_stack.push(ctx);
  else t_ctx_stack.top() = ctx;
  follow_current();
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuCtxGetCurrent(CUcontext* ctx) {
  READY();
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  *ctx = current_ctx();
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuCtxGetDevice(CUdevice* d) {
  READY();
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* c = current_ctx();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  *d = c->device;
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuCtxGetDevice_v2(CUdevice* d, CUcontext ctx) {
  READY();
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* c = nullptr;
  if (CUresult r = ctx_or_current(ctx, &c)) return r;
  *d = c->device;
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuCtxSynchronize(void) {
  READY();
  CUctx_st* c = current_ctx();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  sync_device(c->device);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  READY();
  CUctx_st* c = nullptr;
  if (CUresult r = ctx_or_current(ctx, &c)) return r;
  sync_device(c->device);
  return CUDA_SUCCESS;
}

// The context stack (cuCtxPushCurrent_v2 / cuCtxPopCurrent_v2): pushing
// makes a context current; popping makes the one below it current again.
GPUSIM_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) {
  READY();
  if (!ctx || !valid_ctx(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (!t_ctx_stack.push(ctx)) return CUDA_ERROR_OUT_OF_MEMORY;
  follow_current();
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuCtxPopCurrent(CUcontext* out) {
  READY();
  if (t_ctx_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (out) *out = t_ctx_stack.top();
  t_ctx_stack.pop();
  follow_current();
  return CUDA_SUCCESS;
}
// The special handles (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) name
// the current context's stream: with none, CUDA_ERROR_INVALID_CONTEXT
// (cuStreamGetCtx's documentation says so in these words).
GPUSIM_EXPORT CUresult cuStreamGetCtx(CUstream h, CUcontext* ctx) {
  READY();
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  if (h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
    *ctx = current_ctx();
    return *ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
  }
  CUstream_st* s = resolve(h, false);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  *ctx = primary(s->device);
  return CUDA_SUCCESS;
}

// ---- memory information ----
GPUSIM_EXPORT CUresult cuMemGetInfo(size_t* free_bytes, size_t* total) {
  READY();
  CUctx_st* c = current_ctx();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  size_t cap = config().device_bytes, used = Memory::get().used(c->device);
  if (free_bytes) *free_bytes = used < cap ? cap - used : 0;
  if (total) *total = cap;
  return CUDA_SUCCESS;
}

// The first cuGetProcAddress (without symbolStatus), for binaries built
// against CUDA 11: cuda.h maps the name to _v2, so it is defined last.
#undef cuGetProcAddress
GPUSIM_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cuda_version, flags, nullptr);
}
