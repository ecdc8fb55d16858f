// The C library's own dlsym, for gpuslack's code.
//
// libgpuslack.so defines dlsym itself (interpose/dl_hooks.cc), so
// that a program's lookup of a driver function on a handle of libcuda.so.1
// gets gpuslack's hook. Inside libgpuslack.so the name `dlsym` then means
// that definition, not the C library's: preloaded, libgpuslack.so comes
// before libc.so.6 in the global scope, and a versioned reference
// (dlsym@GLIBC_2.34) is satisfied by an unversioned definition too. So
// gpuslack's own lookups (runtime_symbols.cc, driver_api.cc, cupti_api.cc)
// call these instead: they must get the driver's own function, or a hook
// would call itself. Every dlsym of lib/ goes through here; none says dlsym.
//
// Found without a symbol lookup (any lookup by name could find
// libgpuslack.so's own definition): the loaded objects are walked through
// the dynamic loader's r_debug list, and the first libc.so* or libdl.so*
// (glibc before 2.34 keeps dlsym in libdl) that defines `dlsym` at its
// default version is read through its own dynamic symbol table (GNU or SysV
// hash). This runs in no function a sanitizer intercepts and touches no
// sanitizer-instrumented code: a sanitizer's runtime looks up its own
// interceptors with dlsym(RTLD_NEXT, ...) before its shadow memory exists,
// and that call lands in interpose/dl_hooks.cc, which needs these.
//
// Thread safety: any thread, any time, before or after main; found once
// (racing first calls find the same addresses). No allocation, no lock.
#pragma once

#include <string>

#if defined(__SANITIZE_THREAD__)
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
#define GPUSLACK_LOADER_READS_BEGIN() AnnotateIgnoreReadsBegin(__FILE__, __LINE__)
#define GPUSLACK_LOADER_READS_END() AnnotateIgnoreReadsEnd(__FILE__, __LINE__)
#else
#define GPUSLACK_LOADER_READS_BEGIN() (void)0
#define GPUSLACK_LOADER_READS_END() (void)0
#endif

namespace gpuslack {
namespace cuda {

using DlsymFn = void* (*)(void*, const char*);

// The C library's dlsym, or nullptr where none is found (not
// glibc). Uninstrumented (see above).
DlsymFn libc_dlsym();

// dlsym of the C library; for RTLD_NEXT and RTLD_DEFAULT the
// caller is the calling object of gpuslack (libgpuslack.so, or the test
// executable that links the core). nullptr (and dlerror() untouched) when
// the C library's are not found.
void* real_dlsym(void* handle, const char* name);

// Note [Strings the loader owns]: a library's name as the loader keeps it
// (dladdr's dli_fname, a link map's l_name) was written by whichever thread
// loaded the library, under the loader's own lock. gpuslack reads it after
// a loader call of its own that took that lock, so the read is ordered
// after the write, but ThreadSanitizer does not see the loader's lock (its
// code is not instrumented) and reports a race: a thread starting the GPU
// timeline read libcupti's name while the reporter's first driver call
// loaded an injected tool that had loaded libcupti (the TSan run of
// timeline.test_auto_leaves_the_single_subscription_to_an_injected_tool).
// Such names are read between GPUSLACK_LOADER_READS_BEGIN() and _END():
// under TSan, reads left out of its view (its writes are not); elsewhere,
// nothing. loader_string copies one so; "" for nullptr. (It allocates:
// not for the interceptors' early calls this header otherwise serves.)
std::string loader_string(const char* s);

}  // namespace cuda
}  // namespace gpuslack
