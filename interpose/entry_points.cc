// The interposed entry-point lookups (entry_points.h): cuGetProcAddress_v2
// and cuGetProcAddress of the driver, cudaGetDriverEntryPoint and
// cudaGetDriverEntryPointByVersion (and their _ptsz variants) of the
// runtime. Each calls the real lookup with the caller's arguments, then, on
// success, replaces the function pointer by gpuslack's hook of the same
// exported variant; the result, the status out-parameter and every other
// pointer are the real lookup's. Not timed, not in the ledger, no session
// started: the hooks handed out do that when they are called.
//
// dlsym on a handle of libcuda.so.1 hand out the same hooks
// (dl_hooks.cc), under the same rule (Note [Only the function the hook
// forwards to]).
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstring>

#include "cuda/runtime_symbols.h"
#include "driver_hook_table.h"
#include "entry_points.h"
#include "log/log.h"

namespace gpuslack {
namespace interpose {
namespace {

struct Variant {
  const char* base;
  const char* exported;
  int since;
  bool per_thread;
};
#define GPUSLACK_VARIANT_ROW(base, sym, since, per_thread) {#base, #sym, since, per_thread},
constexpr Variant kVariants[] = {GPUSLACK_DRIVER_VERSIONS(GPUSLACK_VARIANT_ROW)};
#undef GPUSLACK_VARIANT_ROW

// The newest variant of `base` of the given kind at most `cuda_version`.
const Variant* newest(const char* base, int cuda_version, bool per_thread) {
  const Variant* best = nullptr;
  for (const Variant& v : kVariants) {
    if (v.per_thread != per_thread || v.since > cuda_version || std::strcmp(v.base, base) != 0) continue;
    if (!best || v.since > best->since) best = &v;
  }
  return best;
}

// The version the runtime resolves cudaGetDriverEntryPoint's symbols at:
// its own (cudaRuntimeGetVersion), else the headers'.
int runtime_version() {
  static std::atomic<void*> slot{nullptr};
  auto get = cuda::resolve_cached<cudaError_t (*)(int*)>(cuda::Library::kCudaRuntime, slot,
                                                         "cudaRuntimeGetVersion");
  int v = 0;
  if (get && get(&v) == cudaSuccess && v > 0) return v;
  return CUDART_VERSION;
}

template <typename Fn>
Fn real_lookup(cuda::Library lib, std::atomic<void*>& slot, const char* name) {
  Fn real = cuda::resolve_cached<Fn>(lib, slot, name);
  if (!real) log::error("cannot find the real {}: returning an error", name);
  return real;
}

}  // namespace

const char* hooked_driver_variant(const char* base, int cuda_version, bool per_thread) {
  if (!base) return nullptr;
  const Variant* v = per_thread ? newest(base, cuda_version, true) : nullptr;
  if (!v) v = newest(base, cuda_version, false);
  return v ? v->exported : nullptr;
}

// Note [Only the function the hook forwards to]: the hook of a variant
// forwards to that variant's exported function; handing it out for any
// other pointer would change what the caller runs. So the lookup's own
// answer must be that exported function's address, resolved on libcuda's
// handle. A driver newer than the variant table (a _v2 of a call at a
// version the table has not heard of: another ABI), or a tool that wraps
// the driver's entry points (its wrapper is what the lookup returned),
// keep the real pointer, once logged.
void* entry_point_for(const char* base, int cuda_version, bool per_thread, void* real) {
  if (!real) return real;
  const char* variant = hooked_driver_variant(base, cuda_version, per_thread);
  void* hook = driver_hook(variant);
  if (!hook) return real;
  cuda::RuntimeSymbol exported = cuda::find_symbol(cuda::Library::kCudaDriver, variant);
  if (exported.address != real) {
    static std::atomic<bool> told{false};
    if (!told.exchange(true))
      log::debug("entry points: the lookup of {} gave another function than the exported {}; it is passed on "
                 "unhooked",
                 base, variant);
    return real;
  }
  return hook;
}

}  // namespace interpose
}  // namespace gpuslack

using ::gpuslack::cuda::Library;
using ::gpuslack::interpose::entry_point_for;

extern "C" {

// The _ptsz variants of the runtime's lookups: cudaEnableDefault means the
// per-thread default stream there.
cudaError_t cudaGetDriverEntryPoint_ptsz(const char*, void**, unsigned long long, cudaDriverEntryPointQueryResult*);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char*, void**, unsigned int, unsigned long long,
                                                  cudaDriverEntryPointQueryResult*);

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version,
                                                                     cuuint64_t flags,
                                                                     CUdriverProcAddressQueryResult* status) {
  using Fn = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  static std::atomic<void*> slot{nullptr};
  Fn real = gpuslack::interpose::real_lookup<Fn>(Library::kCudaDriver, slot, "cuGetProcAddress_v2");
  if (!real) return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
  CUresult r = real(symbol, pfn, cuda_version, flags, status);
  if (r == CUDA_SUCCESS && pfn)
    *pfn = entry_point_for(symbol, cuda_version, flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, *pfn);
  return r;
}

// For dlsym on libcuda.so.1's handle (entry_point_hook): this library's own
// definition, whatever the global scope would resolve the name to.
__attribute__((visibility("hidden"), alias("cuGetProcAddress_v2"))) CUresult gpuslack_own_cuGetProcAddress_v2(
    const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

}  // extern "C"

namespace {

cudaError_t runtime_lookup(const char* name, std::atomic<void*>& slot, bool ptsz, const char* symbol, void** fn,
                           unsigned int cuda_version, bool with_version, unsigned long long flags,
                           cudaDriverEntryPointQueryResult* status) {
  cudaError_t r;
  if (with_version) {
    using Fn = cudaError_t (*)(const char*, void**, unsigned int, unsigned long long, cudaDriverEntryPointQueryResult*);
    Fn real = gpuslack::interpose::real_lookup<Fn>(Library::kCudaRuntime, slot, name);
    if (!real) return cudaErrorSharedObjectInitFailed;
    r = real(symbol, fn, cuda_version, flags, status);
  } else {
    using Fn = cudaError_t (*)(const char*, void**, unsigned long long, cudaDriverEntryPointQueryResult*);
    Fn real = gpuslack::interpose::real_lookup<Fn>(Library::kCudaRuntime, slot, name);
    if (!real) return cudaErrorSharedObjectInitFailed;
    r = real(symbol, fn, flags, status);
    cuda_version = static_cast<unsigned int>(gpuslack::interpose::runtime_version());
  }
  if (r == cudaSuccess && fn) {
    bool per_thread = (flags & cudaEnablePerThreadDefaultStream) ||
                      (ptsz && !(flags & (cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream)));
    *fn = entry_point_for(symbol, static_cast<int>(cuda_version), per_thread, *fn);
  }
  return r;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** fn,
                                                                            unsigned long long flags,
                                                                            cudaDriverEntryPointQueryResult* status) {
  static std::atomic<void*> slot{nullptr};
  return runtime_lookup("cudaGetDriverEntryPoint", slot, false, symbol, fn, 0, false, flags, status);
}
__attribute__((visibility("default"))) cudaError_t cudaGetDriverEntryPoint_ptsz(
    const char* symbol, void** fn, unsigned long long flags, cudaDriverEntryPointQueryResult* status) {
  static std::atomic<void*> slot{nullptr};
  return runtime_lookup("cudaGetDriverEntryPoint_ptsz", slot, true, symbol, fn, 0, false, flags, status);
}
__attribute__((visibility("default"))) cudaError_t cudaGetDriverEntryPointByVersion(
    const char* symbol, void** fn, unsigned int cuda_version, unsigned long long flags,
    cudaDriverEntryPointQueryResult* status) {
  static std::atomic<void*> slot{nullptr};
  return runtime_lookup("cudaGetDriverEntryPointByVersion", slot, false, symbol, fn, cuda_version, true, flags,
                        status);
}
__attribute__((visibility("default"))) cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
    const char* symbol, void** fn, unsigned int cuda_version, unsigned long long flags,
    cudaDriverEntryPointQueryResult* status) {
  static std::atomic<void*> slot{nullptr};
  return runtime_lookup("cudaGetDriverEntryPointByVersion_ptsz", slot, true, symbol, fn, cuda_version, true,
                        flags, status);
}

// The first cuGetProcAddress, without symbolStatus (binaries built against
// CUDA 11.3 to 11.8): cuda.h maps the name to _v2, so it is defined last.
#undef cuGetProcAddress
__attribute__((visibility("default"))) CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version,
                                                                  cuuint64_t flags) {
  using Fn = CUresult (*)(const char*, void**, int, cuuint64_t);
  static std::atomic<void*> slot{nullptr};
  Fn real = gpuslack::interpose::real_lookup<Fn>(Library::kCudaDriver, slot, "cuGetProcAddress");
  if (!real) return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
  CUresult r = real(symbol, pfn, cuda_version, flags);
  if (r == CUDA_SUCCESS && pfn)
    *pfn = entry_point_for(symbol, cuda_version, flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, *pfn);
  return r;
}
__attribute__((visibility("hidden"), alias("cuGetProcAddress"))) CUresult gpuslack_own_cuGetProcAddress(const char*,
                                                                                                        void**, int,
                                                                                                        cuuint64_t);

}  // extern "C"

void* gpuslack::interpose::entry_point_hook(const char* exported) {
  if (!exported) return nullptr;
  if (std::strcmp(exported, "cuGetProcAddress_v2") == 0) return reinterpret_cast<void*>(&gpuslack_own_cuGetProcAddress_v2);
  if (std::strcmp(exported, "cuGetProcAddress") == 0) return reinterpret_cast<void*>(&gpuslack_own_cuGetProcAddress);
  return nullptr;
}
