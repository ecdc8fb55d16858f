// Internals shared by the simulated runtime's files: cudart.cc (errors,
// devices, streams, events, graphs), cudart_memory.cc (allocation, host
// memory, pointer attributes) and cudart_copy.cc (copies and memsets).
// Not part of any API; included only by those three.
#pragma once

// Built twice (CMakeLists.txt): as libcudart.so.13, and with GPUSIM_CUDA12
// as libcudart.so.12 (README.md, "CUDA 12"), which exports the calls whose
// parameters CUDA 12 declares differently with CUDA 12's: their CUDA 13
// declarations are renamed out of the way, before anything includes the
// header (this header comes before any CUDA header in those files).
#ifdef GPUSIM_CUDA12
#define cudaMemcpyBatchAsync gpusim_cuda13_header_cudaMemcpyBatchAsync
#define cudaStreamGetCaptureInfo gpusim_cuda13_header_cudaStreamGetCaptureInfo
#include <cuda_runtime_api.h>
#undef cudaMemcpyBatchAsync
#undef cudaStreamGetCaptureInfo
// What a CUDA 12.9 runtime reports (cudaRuntimeGetVersion).
#define GPUSIM_RUNTIME_VERSION 12090
#else
#define GPUSIM_RUNTIME_VERSION CUDART_VERSION
#endif

#include "sim.h"

namespace gpusim {
namespace rt {

// Records `e` as the calling thread's last error (unless it is success or
// cudaErrorNotReady) and returns it: every exported call returns through it.
cudaError_t ret(cudaError_t e);
cudaError_t last_error(bool reset);
// The state every call checks first: a usable driver and a device; then,
// when the thread has no current context, binds the primary context of its
// device (Note [The runtime binds the primary context] in cudart.cc).
cudaError_t ready();
// The calling thread's capture interaction mode
// (cudaThreadExchangeStreamCaptureMode); global unless it swapped it.
extern thread_local cudaStreamCaptureMode t_capture_mode;
// Calls that CUDA refuses while a stream captures in global mode, unless the
// calling thread is in relaxed mode: returns
// cudaErrorStreamCaptureUnsupported (and invalidates those captures) then.
cudaError_t refuse_in_capture();
// Using the legacy stream while a blocking stream captures.
cudaError_t check_legacy(CUstream_st* s);

constexpr size_t kAlign = 512;

// Region::flags of device memory that cudaIpcOpenMemHandle mapped from
// another process (cudart_ipc.cc): not this process's to cudaFree.
constexpr unsigned kRegionIpcImported = 1u << 0;
// cudaFree of the allocation at `base`: its IPC export, if any, ends (the
// file stays alive in importers that mapped it). cudart_ipc.cc.
void ipc_forget_export(uintptr_t base);
// Interprocess events (cudaEventInterprocess), cudart_ipc.cc: an event whose
// records and completions are also kept in a page shared with the processes
// that opened its handle. `create` gives `e` its page (false: no memory);
// the others act on an event with a page, imported or not.
bool ipc_event_create(CUevent_st* e);
void ipc_event_record(CUevent_st* e, CUstream_st* s);
bool ipc_event_done(CUevent_st* e);
void ipc_event_sync(CUevent_st* e);
void ipc_event_wait(CUstream_st* s, CUevent_st* e);
void ipc_event_destroy(CUevent_st* e);
inline size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace rt
}  // namespace gpusim

// Returns the driver/device error from an exported call when there is one.
#define READY()                                                             \
  do {                                                                      \
    if (cudaError_t e_ = ::gpusim::rt::ready()) return ::gpusim::rt::ret(e_); \
  } while (0)

// Declares `var`, the stream `handle` resolves to, or returns
// cudaErrorInvalidResourceHandle.
#define STREAM(var, handle, ptds)                          \
  CUstream_st* var = resolve(handle, ptds);                \
  if (!var) return ::gpusim::rt::ret(cudaErrorInvalidResourceHandle)

// Defines name_impl(bool ptds, params...) with the body given, and exports
// `name` (NULL stream = legacy) and `name<suffix>` (NULL = per-thread).
#define GPUSIM_BOTH(ret_t, name, params, ptds_suffix, ...)             \
  static ret_t name##_impl(bool ptds, GPUSIM_UNPAREN params) __VA_ARGS__ \
  GPUSIM_EXPORT ret_t name params { return name##_impl(false, GPUSIM_ARGS_##name); } \
  GPUSIM_EXPORT ret_t name##ptds_suffix params { return name##_impl(true, GPUSIM_ARGS_##name); }
#define GPUSIM_UNPAREN(...) __VA_ARGS__

