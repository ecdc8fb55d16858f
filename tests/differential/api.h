// The calls under test, as a table of function pointers: every hooked
// runtime symbol (interpose/hook_table.h) and every timed driver symbol
// (interpose/driver_hook_table.h), loaded either from the simulated
// runtime itself or from libgpuslack.so (dlopen, RTLD_LOCAL: its hooks then
// find the runtime through the loaded-library scan, as under a framework
// that loads CUDA privately). The test process links the runtime, so both
// are reachable in one process (tests/interpose/in_process.h). The driver
// rows come from libcuda.so.1 in the runtime's run (load_driver).
//
// Calls that are not hooked (cudaGetLastError, cudaEventRecord, ...) and the
// harness's own reads and writes go straight to the runtime in both runs.
#pragma once

#include <dlfcn.h>

#include "driver_hook_table.h"
#include "hook_table.h"

namespace differential {

using gpuslack::CallInfo;  // named by the table's info column

struct Api {
#define DIFFERENTIAL_API_MEMBER(sym, ret, params, args, cat, bytes, info) ret(*sym) params = nullptr;
  GPUSLACK_RUNTIME_HOOKS(DIFFERENTIAL_API_MEMBER)
  GPUSLACK_DRIVER_HOOKS(DIFFERENTIAL_API_MEMBER)
#undef DIFFERENTIAL_API_MEMBER

  // Every symbol found in `handle` (false if any is missing).
  bool load(void* handle) {
    bool ok = handle != nullptr;
#define DIFFERENTIAL_API_LOAD(sym, ret, params, args, cat, bytes, info)                  \
  sym = handle ? reinterpret_cast<decltype(sym)>(dlsym(handle, #sym)) : nullptr; \
  ok = ok && sym != nullptr;
    GPUSLACK_RUNTIME_HOOKS(DIFFERENTIAL_API_LOAD)
    return ok;
  }

  // Every driver symbol found in `handle` (false if any is missing).
  bool load_driver(void* handle) {
    bool ok = handle != nullptr;
    GPUSLACK_DRIVER_HOOKS(DIFFERENTIAL_API_LOAD)
    return ok;
  }
#undef DIFFERENTIAL_API_LOAD
};

}  // namespace differential
