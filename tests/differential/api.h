// The calls under test, as a table of function pointers: every hooked
// runtime symbol (interpose/hook_table.h), loaded either from the simulated
// runtime itself or from libgpuslack.so (dlopen, RTLD_LOCAL: its hooks then
// find the runtime through the loaded-library scan, as under a framework
// that loads CUDA privately). The test process links the runtime, so both
// are reachable in one process (tests/interpose/in_process.h).
//
// Calls that are not hooked (cudaGetLastError, cudaEventRecord, ...) and the
// harness's own reads and writes go straight to the runtime in both runs.
#pragma once

#include <dlfcn.h>

#include "hook_table.h"

namespace differential {

using gpuslack::CallInfo;  // named by the table's info column

struct Api {
#define DIFFERENTIAL_API_MEMBER(sym, ret, params, args, cat, bytes, info) ret(*sym) params = nullptr;
  GPUSLACK_RUNTIME_HOOKS(DIFFERENTIAL_API_MEMBER)
#undef DIFFERENTIAL_API_MEMBER

  // Every symbol found in `handle` (false if any is missing).
  bool load(void* handle) {
    bool ok = handle != nullptr;
#define DIFFERENTIAL_API_LOAD(sym, ret, params, args, cat, bytes, info)                  \
  sym = handle ? reinterpret_cast<decltype(sym)>(dlsym(handle, #sym)) : nullptr; \
  ok = ok && sym != nullptr;
    GPUSLACK_RUNTIME_HOOKS(DIFFERENTIAL_API_LOAD)
#undef DIFFERENTIAL_API_LOAD
    return ok;
  }
};

}  // namespace differential
