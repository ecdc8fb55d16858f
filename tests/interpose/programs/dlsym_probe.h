// The lookups whose answers libgpuslack.so's dlsym and dlvsym must leave as
// they are (interpose/dl_hooks.cc), printed by driver_client_app --dlsym
// natively and preloaded for driver_client_test.py to compare:
//   "same: ..."    must read the same both ways (dlerror()'s text included);
//   "hooked: ..."  the object a hooked driver function's pointer lies in
//                  (libcuda.so.1 natively, libgpuslack.so preloaded).
// dlsym_probe_from_a_library (dlsym_probe_lib.cc) makes the caller-relative
// lookups (RTLD_NEXT, RTLD_DEFAULT) from a library of its own.
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

extern "C" void dlsym_probe_from_a_library();
extern "C" int dlsym_probe_tail_marker();

namespace dlsym_probe {

inline const char* object_of(void* p) {
  Dl_info info{};
  if (!p || !dladdr(p, &info) || !info.dli_fname) return "-";
  const char* slash = std::strrchr(info.dli_fname, '/');
  return slash ? slash + 1 : info.dli_fname;
}

inline const char* error_text() {
  const char* e = dlerror();
  return e ? e : "(no error)";
}

inline void print_lookups(void* cuda) {
  std::printf("same: tail marker %d\n", dlsym_probe_tail_marker());
  dlerror();
  void* p = dlsym(cuda, "cuNoSuchFunction");
  std::printf("same: dlsym missing -> %p, %s\n", p, error_text());
  p = dlvsym(cuda, "cuNoSuchFunction", "GLIBC_2.2.5");
  std::printf("same: dlvsym missing -> %p, %s\n", p, error_text());
  p = dlsym(cuda, "cuDeviceGetName");
  std::printf("same: dlsym unhooked cuDeviceGetName -> %s, %s\n", object_of(p), error_text());
  p = dlsym(cuda, "c");
  std::printf("same: dlsym c -> %p, %s\n", p, error_text());
  p = dlsym(cuda, "cu");
  std::printf("same: dlsym cu -> %p, %s\n", p, error_text());
  // A failed lookup's error left unread, then a hooked lookup: the error is
  // cleared as the C library clears it.
  dlsym(cuda, "cuNoSuchFunction");
  p = dlsym(cuda, "cuMemAlloc_v2");
  std::printf("same: the error after a hooked lookup: %s\n", error_text());
  std::printf("hooked: dlsym cuMemAlloc_v2 -> %s\n", object_of(p));
  p = dlsym(cuda, "cuGetProcAddress_v2");
  std::printf("hooked: dlsym cuGetProcAddress_v2 -> %s\n", object_of(p));
  p = dlvsym(cuda, "cuMemAlloc_v2", "GLIBC_2.2.5");
  std::printf("same: dlvsym cuMemAlloc_v2 at a version it has not -> %p, %s\n", p, error_text());
  p = dlsym(RTLD_DEFAULT, "cuNoSuchFunction");
  std::printf("same: dlsym RTLD_DEFAULT missing -> %p, %s\n", p, error_text());
  dlsym_probe_from_a_library();
}

}  // namespace dlsym_probe
