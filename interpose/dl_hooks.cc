// The interposed dlsym: a lookup of a hooked driver function
// (driver_hook_table.h) on a handle whose scope finds libcuda.so.1's own
// function gets gpuslack's hook of it, as cuGetProcAddress does
// (entry_points.h); so does a lookup of a hooked CUPTI function
// (cupti_hook_table.h) on a handle that finds libcupti's own (XLA's CUPTI
// stub, under the JAX and TensorFlow profilers, resolves CUPTI so: Note
// [gpu_timeline:auto and CUPTI's single subscription] in
// timeline/coexistence.h); every other lookup is the C library's, unchanged.
//
// Note [dlsym keeps its caller]: glibc's dlsym reads its
// caller's return address. RTLD_NEXT searches the objects after the
// caller's; RTLD_DEFAULT searches the caller's scope (a library loaded
// RTLD_LOCAL sees its own dependencies) and names the caller in dlerror()'s
// text. A wrapper that called the real dlsym would move every such lookup
// to libgpuslack.so: a sanitizer's or another tool's dlsym(RTLD_NEXT,
// "malloc") would find the wrong function, or itself. So dlsym is
// a few instructions of assembly that JUMP (never call) to the C
// library's function for RTLD_NEXT, RTLD_DEFAULT and any name that does not
// start with "cu": the C library then sees the caller's own return address
// on the stack and answers exactly as without gpuslack, dlerror() included.
// Only a lookup of a "cu" name on a handle comes here (dlsym_by_handle),
// where the caller matters to glibc only for LD_AUDIT's la_symbind.
//
// What is handed out, and when (dlsym_by_handle):
//   - the lookup fails: its NULL, and dlerror() is the real lookup's;
//   - the name is no exported row of driver_hook_table.h and none of the
//     driver's lookups (cuGetProcAddress_v2, cuGetProcAddress: their
//     answers then go through entry_points.cc too): the real pointer;
//   - the real lookup's pointer is not the driver's exported function of
//     that name, as gpuslack resolves it (Note [Only the function the hook
//     forwards to], entry_points.cc: another tool's wrapper, another copy of
//     the driver): the real pointer;
//   - the caller is the CUDA runtime (libcudart.so*) or the object that
//     defines the function (the driver looking itself up): the real pointer,
//     so that a runtime call that reaches the driver is counted once (hooks.cc,
//     Note [Counted once]);
//   - else gpuslack's hook. The handle is usually libcuda.so.1's own (JAX,
//     Triton: dlopen("libcuda.so.1") then dlsym); a handle of a library
//     that depends on libcuda.so.1 finds the same function and gets the same
//     hook. RTLD_DEFAULT needs no rewriting: the cu* names are exported by
//     libgpuslack.so, and preloaded it is found first.
// Checking the pointer may run failing lookups of gpuslack's own (the
// driver loaded RTLD_LOCAL); the real lookup is then asked once more, so
// that dlerror() says what it says after the caller's own lookup (nothing).
//
// gpuslack's own lookups never come here: they call the C library's
// functions directly (lib/cuda/real_dl.h), since inside libgpuslack.so
// `dlsym` means this definition.
//
// gpuslack's other code that says dlsym (NVTX's headers, looking up an
// injection library's initializer by handle) comes here and is passed on.
//
// dlvsym is not interposed: libcuda.so.1 exports its functions without
// symbol versions (versions live in the names: cuMemAlloc_v2), so dlvsym of
// a driver function on its handle finds nothing, with gpuslack or without.
//
// x86-64 glibc only; elsewhere dlsym is not interposed.
#include <dlfcn.h>

#if defined(__x86_64__) && defined(__GLIBC__)

#include <atomic>
#include <cstring>

#include "cuda/real_dl.h"
#include "cuda/runtime_symbols.h"
#include "entry_points.h"
#include "log/log.h"

namespace gpuslack {
namespace interpose {
namespace {

bool starts_with(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }

const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

// The pointer a lookup of `name` that found `real` (non-null), asked from
// code at `caller`, hands out; `again` re-runs the real lookup.
template <typename Again>
void* by_handle(const char* name, void* real, void* caller, Again again) {
  bool cupti = starts_with(name, "cupti");
  void* hook = cupti ? cupti_hook(name) : driver_hook(name);
  if (!hook && !cupti) hook = entry_point_hook(name);
  if (!hook) return real;
  Dl_info who{}, what{};
  if (dladdr(caller, &who) && who.dli_fname &&
      (starts_with(base_name(who.dli_fname), "libcudart.so") ||
       (dladdr(real, &what) && what.dli_fbase == who.dli_fbase)))
    return real;
  void* exported = cuda::find_symbol(cupti ? cuda::Library::kCupti : cuda::Library::kCudaDriver, name).address;
  again();  // dlerror() as the caller's lookup left it
  if (exported != real) {
    static std::atomic<bool> told{false};
    if (!told.exchange(true))
      log::debug("dlsym: the lookup of {} gave another function than the driver's; it is passed on unhooked", name);
    return real;
  }
  return hook;
}

}  // namespace
}  // namespace interpose
}  // namespace gpuslack

extern "C" {

// For the assembly below. Uninstrumented: a sanitizer's runtime calls
// dlsym(RTLD_NEXT, ...) before its shadow memory exists (real_dl.h).
__attribute__((visibility("hidden"), no_sanitize("address", "thread", "undefined"))) void* gpuslack_libc_dlsym() {
  return reinterpret_cast<void*>(gpuslack::cuda::libc_dlsym());
}

__attribute__((visibility("hidden"))) void* gpuslack_dlsym_by_handle(void* handle, const char* name, void* caller) {
  gpuslack::cuda::DlsymFn real = gpuslack::cuda::libc_dlsym();
  if (!real) return nullptr;
  void* p = real(handle, name);
  if (!p) return p;
  return gpuslack::interpose::by_handle(name, p, caller, [&] { real(handle, name); });
}

}  // extern "C"

// dlsym(handle, name): Note [dlsym keeps
// its caller]. RTLD_DEFAULT is 0, RTLD_NEXT is -1. To the C library's
// function: a jump, with the arguments and the stack as they came (its
// address is found by a call that saves the argument registers and keeps
// the stack 16-byte aligned). To a lookup by handle: a jump with the
// caller's return address as the last argument.
asm(R"(
  .text
  .p2align 4
  .globl dlsym
  .type dlsym, @function
dlsym:
  .cfi_startproc
  testq %rdi, %rdi
  je 1f
  cmpq $-1, %rdi
  je 1f
  testq %rsi, %rsi
  je 1f
  cmpb $0x63, (%rsi)
  jne 1f
  cmpb $0x75, 1(%rsi)
  jne 1f
  movq (%rsp), %rdx
  jmp gpuslack_dlsym_by_handle
1:
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  call gpuslack_libc_dlsym
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  testq %rax, %rax
  je 2f
  jmp *%rax
2:
  ret
  .cfi_endproc
  .size dlsym, .-dlsym
)");

#endif  // __x86_64__ && __GLIBC__
