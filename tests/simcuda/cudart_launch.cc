// libcudart.so.13 of the simulated device: kernels, the code that holds them
// and the driver's entry points. What a program built with nvcc (PyTorch's
// libraries) calls when it loads and launches:
//
//   - fat-binary registration (__cudaRegisterFatBinary, ...Function, ...Var):
//     recorded, never loaded; a registered __device__ variable gets device
//     memory of its size on first use (cudaGetSymbolAddress,
//     cudaMemcpyToSymbol);
//   - launches (the <<<>>> stubs' __cudaPush/PopCallConfiguration and
//     __cudaLaunchKernel, cudaLaunchKernel, cudaLaunchKernelExC, cooperative
//     launches): busy kernels on their stream timed by the cost model
//     (launch_kernel in sim.h); nothing is computed, the values in device
//     memory are whatever was there;
//   - function attributes and occupancy: plausible constants of a 9.0 device;
//   - libraries (cudaLibraryLoadData, ...): handles whose kernels launch as
//     above; they have no globals;
//   - cudaGetDriverEntryPoint[ByVersion]: initializes the driver (cuInit), as
//     the real runtime does, then asks cuGetProcAddress, which logs a name
//     it cannot answer (log_unanswered).
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cudart_internal.h"

using namespace gpusim;
using namespace gpusim::rt;

// Note [Internal calls] (sim.h): defined in cudart_memory.cc and cudart_copy.cc.
GPUSIM_INTERNAL_DECL(cudaError_t, cudaMalloc, (void** p, size_t size));
GPUSIM_INTERNAL_DECL(cudaError_t, cudaMemcpy, (void* dst, const void* src, size_t n, cudaMemcpyKind kind));

namespace {

uint64_t blocks_of(dim3 grid) {
  return static_cast<uint64_t>(grid.x) * grid.y * grid.z;
}

// The launch's shape as CUPTI records it (registers: not known here).
KernelShape shape_of(dim3 grid, dim3 block, size_t shared) {
  KernelShape k;
  k.grid[0] = grid.x, k.grid[1] = grid.y, k.grid[2] = grid.z;
  k.block[0] = block.x, k.block[1] = block.y, k.block[2] = block.z;
  k.dynamic_shared = static_cast<uint32_t>(shared);
  return k;
}

cudaError_t launch(const void* func, dim3 grid, dim3 block, size_t shared, cudaStream_t h, bool ptds) {
  READY();
  if (!func) return ret(cudaErrorInvalidDeviceFunction);
  STREAM(s, h, ptds);
  if (cudaError_t e = check_legacy(s)) return ret(e);
  if (blocks_of(grid) == 0) return ret(cudaErrorInvalidConfiguration);
  launch_kernel(s, shape_of(grid, block, shared), func);
  return cudaSuccess;
}

// The <<<>>> configuration pushed by a launch stub, popped by it at once.
struct CallConfig {
  dim3 grid, block;
  size_t shared = 0;
  void* stream = nullptr;
};
thread_local std::vector<CallConfig> t_configs;

// __device__ variables registered by fat binaries: host shadow -> size and
// device memory (allocated on first use).
struct Var {
  size_t size = 0;
  void* device = nullptr;
};
std::mutex g_vars_mu;
std::map<const void*, Var>& vars() {
  static auto* m = new std::map<const void*, Var>();  // never freed: used at exit
  return *m;
}

cudaError_t symbol_address(const void* symbol, void** out, size_t* size) {
  std::lock_guard<std::mutex> l(g_vars_mu);
  auto it = vars().find(symbol);
  if (it == vars().end()) return cudaErrorInvalidSymbol;
  Var& v = it->second;
  if (!v.device) {
    size_t bytes = round_up(v.size ? v.size : 1, kAlign);
    if (gpusim_internal_cudaMalloc(&v.device, bytes) != cudaSuccess) return cudaErrorMemoryAllocation;
  }
  *out = v.device;
  if (size) *size = v.size;
  return cudaSuccess;
}

// A loaded library: its kernels are named handles.
struct Library {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<char>> kernels;
};

cudaError_t driver_entry_point(const char* symbol, void** fn, int version, unsigned long long flags,
                               cudaDriverEntryPointQueryResult* status) {
  if (status) *status = cudaDriverEntryPointSymbolNotFound;
  if (!symbol || !fn) return ret(cudaErrorInvalidValue);
  *fn = nullptr;
  READY();
  // The real runtime initializes the driver before it hands out its
  // functions: they are called without cuInit.
  if (cuInit(0) != CUDA_SUCCESS) return ret(cudaErrorInitializationError);
  cuuint64_t cu_flags = 0;
  if (flags & cudaEnableLegacyStream) cu_flags |= CU_GET_PROC_ADDRESS_LEGACY_STREAM;
  if (flags & cudaEnablePerThreadDefaultStream) cu_flags |= CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  CUdriverProcAddressQueryResult q;
  if (cuGetProcAddress(symbol, fn, version, cu_flags, &q) != CUDA_SUCCESS || !*fn) {
    *fn = nullptr;  // cuGetProcAddress logged the name (log_unanswered)
    return cudaSuccess;  // the runtime's answer: success, status "not found"
  }
  if (status) *status = cudaDriverEntryPointSuccess;
  return cudaSuccess;
}

}  // namespace

// ---- fat-binary registration (what nvcc's host code calls at load) ----
GPUSIM_EXPORT void** __cudaRegisterFatBinary(void* fat_cubin) {
  return new void*(fat_cubin);  // one per loaded module; freed by Unregister
}
GPUSIM_EXPORT void __cudaRegisterFatBinaryEnd(void** handle) { (void)handle; }
GPUSIM_EXPORT void __cudaUnregisterFatBinary(void** handle) { delete handle; }
GPUSIM_EXPORT void __cudaRegisterFunction(void** handle, const char* host_fun, char* device_fun,
                                          const char* device_name, int thread_limit, uint3* tid, uint3* bid,
                                          dim3* block, dim3* grid, int* wsize) {
  (void)handle, (void)device_fun, (void)thread_limit;
  (void)tid, (void)bid, (void)block, (void)grid, (void)wsize;
  // The host stub's device name (mangled): what CUPTI's kernel records show.
  register_static_kernel_name(host_fun, device_name);
}
GPUSIM_EXPORT void __cudaRegisterVar(void** handle, char* host_var, char* device_address, const char* device_name,
                                     int ext, size_t size, int constant, int global) {
  (void)handle, (void)device_address, (void)device_name, (void)ext, (void)constant, (void)global;
  std::lock_guard<std::mutex> l(g_vars_mu);
  vars()[host_var].size = size;
}

// ---- launches ----
GPUSIM_EXPORT unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, struct CUstream_st* stream) {
  t_configs.push_back({grid, block, shared, stream});
  return 0;
}
GPUSIM_EXPORT cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared, void* stream) {
  if (t_configs.empty()) return cudaErrorMissingConfiguration;
  CallConfig c = t_configs.back();
  t_configs.pop_back();
  *grid = c.grid;
  *block = c.block;
  *shared = c.shared;
  *static_cast<void**>(stream) = c.stream;
  return cudaSuccess;
}
// A kernel handle is the host function's address (or a library's kernel).
GPUSIM_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* fun) {
  if (!kernel || !fun) return cudaErrorInvalidValue;
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(fun));
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 grid, dim3 block, void** args, size_t shared,
                                             cudaStream_t h) {
  (void)args;
  return launch(k, grid, block, shared, h, false);
}
GPUSIM_EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 grid, dim3 block, void** args,
                                                  size_t shared, cudaStream_t h) {
  (void)args;
  return launch(k, grid, block, shared, h, true);
}
#define GPUSIM_ARGS_cudaLaunchKernel func, grid, block, args, shared, h
GPUSIM_BOTH(cudaError_t, cudaLaunchKernel,
            (const void* func, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t h), _ptsz, {
  (void)args;
  return launch(func, grid, block, shared, h, ptds);
})
#define GPUSIM_ARGS_cudaLaunchCooperativeKernel func, grid, block, args, shared, h
GPUSIM_BOTH(cudaError_t, cudaLaunchCooperativeKernel,
            (const void* func, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t h), _ptsz, {
  (void)args;
  return launch(func, grid, block, shared, h, ptds);
})
#define GPUSIM_ARGS_cudaLaunchKernelExC config, func, args
GPUSIM_BOTH(cudaError_t, cudaLaunchKernelExC, (const cudaLaunchConfig_t* config, const void* func, void** args),
            _ptsz, {
  (void)args;
  if (!config) return ret(cudaErrorInvalidValue);
  return launch(func, config->gridDim, config->blockDim, config->dynamicSmemBytes, config->stream, ptds);
})

// ---- functions: attributes and occupancy ----
GPUSIM_EXPORT cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, const void* func) {
  READY();
  if (!a || !func) return ret(cudaErrorInvalidValue);
  std::memset(a, 0, sizeof(*a));
  a->maxThreadsPerBlock = 1024;
  a->numRegs = 32;
  a->ptxVersion = 90;
  a->binaryVersion = 90;
  a->maxDynamicSharedSizeBytes = 48 << 10;
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  READY();
  (void)attr, (void)value;
  if (!func) return ret(cudaErrorInvalidDeviceFunction);
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaKernelSetAttributeForDevice(cudaKernel_t k, cudaFuncAttribute attr, int value,
                                                          int device) {
  READY();
  (void)attr, (void)value;
  if (!k) return ret(cudaErrorInvalidDeviceFunction);
  if (!valid_device(device)) return ret(cudaErrorInvalidDevice);
  return cudaSuccess;
}
// A 9.0 SM: 2048 threads, at most 32 blocks.
GPUSIM_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* n, const void* func,
                                                                                 int block_size, size_t shared,
                                                                                 unsigned flags) {
  READY();
  (void)shared, (void)flags;
  if (!n || !func || block_size <= 0) return ret(cudaErrorInvalidValue);
  *n = std::min(32, std::max(1, 2048 / block_size));
  return cudaSuccess;
}
GPUSIM_INTERNAL_ALIAS(cudaError_t, cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
                      (int* n, const void* func, int block_size, size_t shared, unsigned flags));
GPUSIM_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, const void* func, int block_size,
                                                                        size_t shared) {
  return gpusim_internal_cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n, func, block_size, shared, 0);
}

// ---- __device__ variables ----
GPUSIM_EXPORT cudaError_t cudaGetSymbolAddress(void** p, const void* symbol) {
  READY();
  if (!p) return ret(cudaErrorInvalidValue);
  return ret(symbol_address(symbol, p, nullptr));
}
GPUSIM_EXPORT cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                                             cudaMemcpyKind kind) {
  READY();
  void* dst = nullptr;
  size_t size = 0;
  if (cudaError_t e = symbol_address(symbol, &dst, &size)) return ret(e);
  if (offset + count > size) return ret(cudaErrorInvalidValue);
  if (kind == cudaMemcpyDeviceToDevice) return gpusim_internal_cudaMemcpy(static_cast<char*>(dst) + offset, src, count, kind);
  return gpusim_internal_cudaMemcpy(static_cast<char*>(dst) + offset, src, count, cudaMemcpyHostToDevice);
}

// ---- libraries ----
GPUSIM_EXPORT cudaError_t cudaLibraryLoadData(cudaLibrary_t* lib, const void* code, cudaJitOption* jit_options,
                                              void** jit_values, unsigned n_jit, cudaLibraryOption* lib_options,
                                              void** lib_values, unsigned n_lib) {
  READY();
  (void)jit_options, (void)jit_values, (void)n_jit, (void)lib_options, (void)lib_values, (void)n_lib;
  if (!lib || !code) return ret(cudaErrorInvalidValue);
  *lib = reinterpret_cast<cudaLibrary_t>(new Library());
  return cudaSuccess;
}
GPUSIM_INTERNAL_ALIAS(cudaError_t, cudaLibraryLoadData,
                      (cudaLibrary_t* lib, const void* code, cudaJitOption* jit_options, void** jit_values,
                       unsigned n_jit, cudaLibraryOption* lib_options, void** lib_values, unsigned n_lib));
GPUSIM_EXPORT cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t* lib, const char* file, cudaJitOption* jit_options,
                                                  void** jit_values, unsigned n_jit, cudaLibraryOption* lib_options,
                                                  void** lib_values, unsigned n_lib) {
  return gpusim_internal_cudaLibraryLoadData(lib, file, jit_options, jit_values, n_jit, lib_options, lib_values, n_lib);
}
GPUSIM_EXPORT cudaError_t cudaLibraryUnload(cudaLibrary_t lib) {
  if (!lib) return ret(cudaErrorInvalidValue);
  delete reinterpret_cast<Library*>(lib);
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaLibraryGetKernel(cudaKernel_t* k, cudaLibrary_t lib, const char* name) {
  if (!k || !lib || !name) return ret(cudaErrorInvalidValue);
  auto* l = reinterpret_cast<Library*>(lib);
  std::lock_guard<std::mutex> g(l->mu);
  auto& slot = l->kernels[name];
  if (!slot) {
    slot.reset(new char(0));
    register_kernel_name(slot.get(), name);
  }
  *k = reinterpret_cast<cudaKernel_t>(slot.get());
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaLibraryGetKernelCount(unsigned* count, cudaLibrary_t lib) {
  if (!count || !lib) return ret(cudaErrorInvalidValue);
  auto* l = reinterpret_cast<Library*>(lib);
  std::lock_guard<std::mutex> g(l->mu);
  *count = static_cast<unsigned>(l->kernels.size());
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaLibraryGetGlobal(void** p, size_t* bytes, cudaLibrary_t lib, const char* name) {
  (void)p, (void)bytes, (void)lib;
  log_unanswered("cudaLibraryGetGlobal", name);
  return ret(cudaErrorSymbolNotFound);
}
GPUSIM_EXPORT cudaError_t cudaLibraryGetManaged(void** p, size_t* bytes, cudaLibrary_t lib, const char* name) {
  (void)p, (void)bytes, (void)lib;
  log_unanswered("cudaLibraryGetManaged", name);
  return ret(cudaErrorSymbolNotFound);
}
GPUSIM_EXPORT cudaError_t cudaLibraryGetUnifiedFunction(void** f, cudaLibrary_t lib, const char* name) {
  (void)f, (void)lib;
  log_unanswered("cudaLibraryGetUnifiedFunction", name);
  return ret(cudaErrorSymbolNotFound);
}

// ---- the driver's entry points ----
GPUSIM_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int version,
                                                           unsigned long long flags,
                                                           cudaDriverEntryPointQueryResult* status) {
  return driver_entry_point(symbol, fn, static_cast<int>(version), flags, status);
}
GPUSIM_EXPORT cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long flags,
                                                  cudaDriverEntryPointQueryResult* status) {
  return driver_entry_point(symbol, fn, CUDART_VERSION, flags, status);
}

// ---- profiler ----
GPUSIM_EXPORT cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
GPUSIM_EXPORT cudaError_t cudaProfilerStop(void) { return cudaSuccess; }
