// libgpuslack.so loaded into the test process itself (dlopen, RTLD_LOCAL),
// for the in-process tests of the hooks: its handle, and its C API's live
// summary. The test process links the simulated libraries, so each hooked
// symbol is reachable twice: as the library's own function and as
// gpuslack's hook.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace in_process {

// Loads libgpuslack.so once, with GPUSLACK_CONF set to `conf` first (the
// configuration is read on the first hooked call). Null if it fails to load.
inline void* gpuslack(const char* conf) {
  static void* h = [conf] {
    setenv("GPUSLACK_CONF", conf, 1);
    return dlopen(GPUSLACK_SO, RTLD_NOW | RTLD_LOCAL);
  }();
  return h;
}

// gpuslack_summary_json() of the loaded library ("" before any CUDA call).
inline std::string summary_json(void* handle) {
  auto get = reinterpret_cast<char* (*)()>(dlsym(handle, "gpuslack_summary_json"));
  auto release = reinterpret_cast<void (*)(void*)>(dlsym(handle, "gpuslack_free"));
  char* json = get ? get() : nullptr;
  std::string out = json ? json : "";
  if (release) release(json);
  return out;
}

}  // namespace in_process
