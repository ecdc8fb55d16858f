// Two libraries built from this file, both linked by driver_client_app in
// this order: dlsym_probe_lib and, with DLSYM_PROBE_TAIL, dlsym_probe_tail.
// Each defines dlsym_probe_symbol (1 and 2), so a dlsym(RTLD_NEXT, ...) from
// the first must find the second's: evaluated relative to libgpuslack.so
// (preloaded before both) it would find the first's own, the hazard Note
// [dlsym keeps its caller] (interpose/dl_hooks.cc) is about.
#include <dlfcn.h>

#include <cstdio>

#ifdef DLSYM_PROBE_TAIL
extern "C" __attribute__((visibility("default"))) int dlsym_probe_symbol() { return 2; }
extern "C" __attribute__((visibility("default"))) int dlsym_probe_tail_marker() { return 2; }
#else
#include "dlsym_probe.h"

extern "C" __attribute__((visibility("default"))) int dlsym_probe_symbol() { return 1; }

extern "C" __attribute__((visibility("default"))) void dlsym_probe_from_a_library() {
  using Probe = int (*)();
  dlerror();
  auto next = reinterpret_cast<Probe>(dlsym(RTLD_NEXT, "dlsym_probe_symbol"));
  std::printf("same: library RTLD_NEXT dlsym_probe_symbol -> %d in %s\n", next ? next() : 0,
              dlsym_probe::object_of(reinterpret_cast<void*>(next)));
  auto deflt = reinterpret_cast<Probe>(dlsym(RTLD_DEFAULT, "dlsym_probe_symbol"));
  std::printf("same: library RTLD_DEFAULT dlsym_probe_symbol -> %d\n", deflt ? deflt() : 0);
  void* p = dlsym(RTLD_NEXT, "dlsym_probe_missing");
  std::printf("same: library RTLD_NEXT missing -> %p, %s\n", p, dlsym_probe::error_text());
  p = dlsym(RTLD_DEFAULT, "dlsym_probe_missing");
  std::printf("same: library RTLD_DEFAULT missing -> %p, %s\n", p, dlsym_probe::error_text());
  p = dlvsym(RTLD_NEXT, "dlsym_probe_symbol", "DLSYM_PROBE_1");
  std::printf("same: library dlvsym RTLD_NEXT -> %s, %s\n", dlsym_probe::object_of(p), dlsym_probe::error_text());
  p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  std::printf("same: library dlvsym RTLD_NEXT dlsym@GLIBC_2.2.5 -> %s, %s\n", dlsym_probe::object_of(p),
              dlsym_probe::error_text());
  p = dlsym(RTLD_NEXT, "cuMemAlloc_v2");
  std::printf("same: library RTLD_NEXT cuMemAlloc_v2 -> %s, %s\n", dlsym_probe::object_of(p),
              dlsym_probe::error_text());
}
#endif
