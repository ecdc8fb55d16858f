// Finding the real CUDA runtime (and NCCL) entry points at run time.
//
// gpuslack links no CUDA library (docs/design.md, principle 2): a hook finds the
// function it wraps here, by name, the first time it is called.
//
//   1. dlsym(RTLD_NEXT, name): the next definition after libgpuslack.so in
//      the global lookup scope. This is the normal case: libcudart linked by
//      the executable or by a library loaded RTLD_GLOBAL, with libgpuslack.so
//      preloaded in front of it.
//   2. Otherwise libcudart was loaded RTLD_LOCAL (ctypes, a plain dlopen by a
//      framework's extension module), so it is not in the global scope. Walk
//      the loaded objects (dl_iterate_phdr), take the first whose file name
//      starts with the library's prefix ("libcudart.so", "libnccl.so",
//      "libcupti.so", "libcuda.so"), re-open it with RTLD_NOLOAD (a new
//      reference to the loaded copy, never a new load) and dlsym on that.
//
// Thread safety: any thread, any time; no locks, no allocation except
// inside the dynamic loader. Callers cache the result (the hook table does).
#pragma once

#include <atomic>

namespace gpuslack {
namespace cuda {

enum class FoundBy {
  kNotFound,
  kRtldNext,       // step 1
  kLoadedLibrary,  // step 2
};

struct RuntimeSymbol {
  void* address = nullptr;
  FoundBy found_by = FoundBy::kNotFound;
  const char* library = nullptr;  // path of the object that defines it, if known
};

// The libraries whose entry points gpuslack finds.
enum class Library : unsigned char {
  kCudaRuntime,  // libcudart.so*
  kNccl,         // libnccl.so*
  kCupti,        // libcupti.so* (the interposed cuptiSubscribe*: interpose/cupti_hooks.cc)
  kCudaDriver,   // libcuda.so* (the driver API hooks: interpose/driver_hook_table.h)
};
inline constexpr int kLibraryCount = 4;

// The file-name prefix the loaded-object scan looks for.
const char* library_prefix(Library lib);

// The loaded copy of `lib` (step 2 above: the first loaded object whose
// file name starts with its prefix), re-opened RTLD_NOLOAD, or nullptr when
// none is loaded; `*path` is its file name. Never loads a new copy.
void* loaded_library(Library lib, const char** path);

// Looks up the real definition of `name` in `lib`, never one in
// libgpuslack.so itself.
RuntimeSymbol find_symbol(Library lib, const char* name);

// find_symbol once per call site: `slot` caches the address (a later call
// is one acquire load); nullptr while the library is not loaded.
template <typename Fn>
Fn resolve_cached(Library lib, std::atomic<void*>& slot, const char* name) {
  void* p = slot.load(std::memory_order_acquire);
  if (!p) {
    p = find_symbol(lib, name).address;
    if (p) slot.store(p, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(p);
}

// Defines `ret fn params`, a function of gpuslack's own that calls the real
// `symbol` of `lib` (resolve_cached: looked up on the first call, then one
// acquire load) with `args`, or returns `unavailable` while `lib` is not
// loaded. For the primitive layers' definitions (runtime_api.cc,
// nccl_api.cc), inside namespace gpuslack::cuda:
//   GPUSLACK_REAL_CALL(Library::kNccl, ncclResult_t, ncclSystemError,
//                      nccl_get_version, "ncclGetVersion", (int* version), (version))
#define GPUSLACK_REAL_CALL(lib, ret, unavailable, fn, symbol, params, args) \
  ret fn params {                                                          \
    static std::atomic<void*> slot{nullptr};                               \
    auto real = ::gpuslack::cuda::resolve_cached<ret(*) params>(lib, slot, symbol); \
    return real ? real args : unavailable;                                 \
  }

// The CUDA runtime function `name`: find_symbol(Library::kCudaRuntime, name).
inline RuntimeSymbol find_runtime_symbol(const char* name) { return find_symbol(Library::kCudaRuntime, name); }

const char* found_by_name(FoundBy how, Library lib = Library::kCudaRuntime);

// The major version of the CUDA runtime gpuslack forwards to (12 for
// libcudart.so.12, 13 for libcudart.so.13): where CUDA 12 and 13 export a
// symbol with different parameters (interpose/hook_table.h, ABI note), the
// hooks and gpuslack's own calls (runtime_api.cc) follow it.
//
// Found once, lazily: the runtime's own cudaRuntimeGetVersion, looked up as
// every hook's target is (find_symbol, so the same libcudart, global or
// RTLD_LOCAL), asked for its version (it needs no device and touches no
// error state); failing that, the number after "libcudart.so." in the file
// name of the object that defines it. Then cached: a later call is one
// relaxed load. 0 while no runtime is loaded (not cached: asked again).
int runtime_major_version();

// The major version a libcudart file name says ("/x/libcudart.so.12.9.79"
// -> 12), or 0 when it says none. For runtime_major_version.
int runtime_major_from_file_name(const char* path);

}  // namespace cuda
}  // namespace gpuslack
