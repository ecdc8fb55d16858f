// libcudart.so.13 of the simulated device: the CUDA Runtime API entry points
// gpuslack and its tests use, with the symbol version node of the real
// library (cudart.map), so binaries built against the toolkit bind to it.
//
// Semantics follow the CUDA Runtime API's "API synchronization behavior";
// each place where it matters says which rule it implements. The _ptsz/_ptds
// variants differ only in what a NULL stream means (the per-thread default
// stream instead of the legacy one).
//
// This file: errors, versions, devices, streams, events and graphs.
// Allocation: cudart_memory.cc. Copies and memsets: cudart_copy.cc.
#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <set>
#include <type_traits>

#include "cudart_internal.h"

using namespace gpusim;
using namespace gpusim::rt;

namespace {
thread_local cudaError_t t_last_error = cudaSuccess;

// ------------------------------------------------------------ contexts ----
//
// Note [The runtime binds the primary context]: "CUDA Runtime API calls
// operate on the CUDA Driver API CUcontext which is current to the calling
// host thread"; "If no CUcontext is current to the calling thread when a
// CUDA Runtime API call which requires an active context is made, then the
// primary context for a device will be selected, made current to the
// calling thread, and initialized"; and "cudaSetDevice() initializes the
// primary context for the specified device and makes it current to the
// calling thread by calling cuCtxSetCurrent()" (CUDA Runtime API,
// "Interactions with the CUDA Driver API", CUDA 12 and 13). So every call
// here that acts on a device binds, through ready(), the primary context
// of the thread's device when the thread has no context; the device and
// version queries (cudaGetDeviceCount, cudaGetDevice,
// cudaGetDeviceProperties, cudaDeviceGetAttribute, cudaDeviceCanAccessPeer,
// cudaDriverGetVersion, ...) need none and bind nothing. A context the
// application made current (cuCtxSetCurrent, cuCtxPushCurrent) is used as
// it is: its device is the thread's device (driver.cc keeps the two
// together). The runtime retains each device's primary context once and
// never releases it.
//
// The driver's entry points are found as the real runtime finds them: in
// libcuda.so.1's own scope (its cuGetProcAddress), never an interposer's.
struct DriverContexts {
  CUresult (*get_current)(CUcontext*) = nullptr;
  CUresult (*set_current)(CUcontext) = nullptr;
  CUresult (*retain)(CUcontext*, CUdevice) = nullptr;
  bool ok = false;
};

const DriverContexts& driver_contexts() {
  static const DriverContexts d = [] {
    DriverContexts r;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) return r;
    using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    auto get = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
    if (!get) return r;
    auto find = [&](const char* name, auto* slot) {
      void* f = nullptr;
      if (get(name, &f, CUDA_VERSION, 0, nullptr) == CUDA_SUCCESS) *slot = reinterpret_cast<std::remove_reference_t<decltype(*slot)>>(f);
      return f != nullptr;
    };
    CUresult (*init)(unsigned) = nullptr;
    r.ok = find("cuInit", &init) && find("cuCtxGetCurrent", &r.get_current) &&
           find("cuCtxSetCurrent", &r.set_current) && find("cuDevicePrimaryCtxRetain", &r.retain) &&
           init(0) == CUDA_SUCCESS;
    return r;
  }();
  return d;
}

// The primary context of `device`, retained on first use. Plain storage
// with no destructor: runtime calls may come while the process exits.
constexpr int kMaxDevices = 64;
std::atomic<CUcontext> g_retained[kMaxDevices];

CUcontext primary_context(int device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  if (CUcontext c = g_retained[device].load(std::memory_order_acquire)) return c;
  static std::mutex mu;  // trivially destructible
  std::lock_guard<std::mutex> l(mu);
  CUcontext c = g_retained[device].load(std::memory_order_acquire);
  if (!c && driver_contexts().retain(&c, device) != CUDA_SUCCESS) c = nullptr;
  if (c) gpusim::register_runtime_teardown();  // sim.h, "The CUDA runtime's teardown"
  g_retained[device].store(c, std::memory_order_release);
  return c;
}

// Makes the primary context of `device` current on this thread (replacing
// the top of its context stack, as cuCtxSetCurrent does).
cudaError_t make_primary_current(int device) {
  const DriverContexts& d = driver_contexts();
  if (!d.ok) return cudaErrorInitializationError;
  CUcontext c = primary_context(device);
  if (!c || d.set_current(c) != CUDA_SUCCESS) return cudaErrorInitializationError;
  return cudaSuccess;
}

// A usable driver and a device, without binding a context: the queries.
cudaError_t ready_without_context() {
  if (config().no_driver) return cudaErrorInsufficientDriver;
  if (config().device_count == 0) return cudaErrorNoDevice;
  return cudaSuccess;
}

}  // namespace

#define READY_WITHOUT_CONTEXT()                                                    \
  do {                                                                             \
    if (cudaError_t e_ = ready_without_context()) return ::gpusim::rt::ret(e_); \
  } while (0)

namespace gpusim {
namespace rt {

cudaError_t ret(cudaError_t e) {
  if (e != cudaSuccess && e != cudaErrorNotReady) t_last_error = e;
  return e;
}

cudaError_t ready() {
  if (cudaError_t e = ready_without_context()) return e;
  // Note [The runtime binds the primary context].
  const DriverContexts& d = driver_contexts();
  if (!d.ok) return cudaErrorInitializationError;
  CUcontext c = nullptr;
  if (d.get_current(&c) == CUDA_SUCCESS && c) return cudaSuccess;
  return make_primary_current(current_device());
}

thread_local cudaStreamCaptureMode t_capture_mode = cudaStreamCaptureModeGlobal;

cudaError_t refuse_in_capture() {
  // A thread in relaxed mode may make unsafe calls during any capture
  // (PyTorch's allocator switches to it around cudaMalloc while capturing).
  if (t_capture_mode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
  if (!any_global_capture()) return cudaSuccess;
  std::lock_guard<std::mutex> l(core().mu);
  for (CUstream_st* s : core().streams)
    if (s->capture_graph && s->capture_mode == cudaStreamCaptureModeGlobal) s->capture_invalidated = true;
  return cudaErrorStreamCaptureUnsupported;
}

cudaError_t check_legacy(CUstream_st* s) {
  if (s->legacy && legacy_use_conflicts(s->device)) return cudaErrorStreamCaptureImplicit;
  return cudaSuccess;
}

cudaError_t last_error(bool reset) {
  cudaError_t e = t_last_error;
  if (reset) t_last_error = cudaSuccess;
  return e;
}

}  // namespace rt
}  // namespace gpusim

namespace {

// ------------------------------------------------------------ capture ----

cudaError_t stream_sync(CUstream_st* s) {
  if (is_capturing(s)) {
    invalidate_capture(s);
    return cudaErrorStreamCaptureUnsupported;
  }
  if (cudaError_t e = check_legacy(s)) return e;
  sync_stream(s);
  return cudaSuccess;
}

cudaError_t stream_query(CUstream_st* s) {
  if (is_capturing(s)) {
    invalidate_capture(s);
    return cudaErrorStreamCaptureUnsupported;
  }
  return stream_idle(s) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t is_capturing_status(CUstream_st* s, cudaStreamCaptureStatus* status) {
  if (!status) return cudaErrorInvalidValue;
  if (s->legacy && legacy_use_conflicts(s->device)) return cudaErrorStreamCaptureImplicit;
  std::lock_guard<std::mutex> l(core().mu);
  if (!s->capture_graph) *status = cudaStreamCaptureStatusNone;
  else *status = s->capture_invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

}  // namespace

// ---- errors and versions ----
GPUSIM_EXPORT cudaError_t cudaGetLastError(void) { return last_error(/*reset=*/true); }
GPUSIM_EXPORT cudaError_t cudaPeekAtLastError(void) { return last_error(/*reset=*/false); }
GPUSIM_EXPORT const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
#define NAME(x) case x: return #x;
    NAME(cudaSuccess) NAME(cudaErrorInvalidValue) NAME(cudaErrorMemoryAllocation)
    NAME(cudaErrorInsufficientDriver) NAME(cudaErrorNoDevice) NAME(cudaErrorInvalidDevice)
    NAME(cudaErrorInvalidResourceHandle) NAME(cudaErrorNotReady) NAME(cudaErrorIllegalState)
    NAME(cudaErrorStreamCaptureUnsupported) NAME(cudaErrorStreamCaptureInvalidated)
    NAME(cudaErrorStreamCaptureImplicit) NAME(cudaErrorHostMemoryAlreadyRegistered)
    NAME(cudaErrorHostMemoryNotRegistered) NAME(cudaErrorNotSupported)
    NAME(cudaErrorPeerAccessAlreadyEnabled) NAME(cudaErrorPeerAccessNotEnabled)
#undef NAME
    default: return "cudaErrorUnknown";
  }
}
GPUSIM_EXPORT const char* cudaGetErrorString(cudaError_t e) { return cudaGetErrorName(e); }
GPUSIM_EXPORT cudaError_t cudaDriverGetVersion(int* v) {
  if (!v) return ret(cudaErrorInvalidValue);
  *v = config().no_driver ? 0 : CUDA_VERSION;
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaRuntimeGetVersion(int* v) {
  if (!v) return ret(cudaErrorInvalidValue);
  *v = GPUSIM_RUNTIME_VERSION;
  return cudaSuccess;
}

// ---- devices ----
GPUSIM_EXPORT cudaError_t cudaGetDeviceCount(int* n) {
  if (!n) return ret(cudaErrorInvalidValue);
  *n = 0;
  READY_WITHOUT_CONTEXT();
  *n = config().device_count;
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaGetDevice(int* d) {
  READY_WITHOUT_CONTEXT();
  if (!d) return ret(cudaErrorInvalidValue);
  *d = current_device();
  return cudaSuccess;
}
// Makes the device's primary context current (Note [The runtime binds the
// primary context]), replacing the thread's current context if any.
GPUSIM_EXPORT cudaError_t cudaSetDevice(int d) {
  READY_WITHOUT_CONTEXT();
  if (!valid_device(d)) return ret(cudaErrorInvalidDevice);
  set_current_device(d);
  return ret(make_primary_current(d));
}
// Peer access: every pair of distinct simulated devices can reach each
// other (they share the host's memory); enabling records the pair, as the
// runtime does, and answers the runtime's errors for repeats.
namespace {
std::mutex g_peer_mu;
std::set<std::pair<int, int>> g_peers;  // (accessing device, peer)
}  // namespace
GPUSIM_EXPORT cudaError_t cudaDeviceCanAccessPeer(int* can, int d, int peer) {
  READY_WITHOUT_CONTEXT();
  if (!can) return ret(cudaErrorInvalidValue);
  if (!valid_device(d) || !valid_device(peer)) return ret(cudaErrorInvalidDevice);
  *can = d != peer;
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  READY();
  if (flags) return ret(cudaErrorInvalidValue);
  int d = current_device();
  if (!valid_device(peer) || peer == d) return ret(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> l(g_peer_mu);
  if (!g_peers.insert({d, peer}).second) return ret(cudaErrorPeerAccessAlreadyEnabled);
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaDeviceDisablePeerAccess(int peer) {
  READY();
  std::lock_guard<std::mutex> l(g_peer_mu);
  if (!g_peers.erase({current_device(), peer})) return ret(cudaErrorPeerAccessNotEnabled);
  return cudaSuccess;
}
#ifdef GPUSIM_CUDA12
// CUDA 12's cudaDeviceProp (cudaGetDeviceProperties_v2) is laid out
// otherwise than the CUDA 13 one this file is built with: not simulated
// (README.md, "CUDA 12"); cudaDeviceGetAttribute answers the same facts.
GPUSIM_EXPORT cudaError_t cudaGetDeviceProperties_v2(cudaDeviceProp*, int) { return ret(cudaErrorNotSupported); }
GPUSIM_EXPORT cudaError_t cudaGetDeviceProperties(cudaDeviceProp*, int) { return ret(cudaErrorNotSupported); }
#else
GPUSIM_EXPORT cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  READY_WITHOUT_CONTEXT();
  if (!p) return ret(cudaErrorInvalidValue);
  if (!valid_device(d)) return ret(cudaErrorInvalidDevice);
  std::memset(p, 0, sizeof(*p));
  std::snprintf(p->name, sizeof(p->name), "gpusim simulated device %d", d);
  p->totalGlobalMem = config().device_bytes;
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = 132;
  // Launch limits of a 9.0 device (an H100 SXM): PyTorch sizes its grids
  // from them (distribution kernels divide by maxThreadsPerMultiProcessor).
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff;
  p->maxGridSize[1] = 65535;
  p->maxGridSize[2] = 65535;
  p->maxThreadsPerMultiProcessor = 2048;
  p->maxBlocksPerMultiProcessor = 32;
  p->regsPerBlock = 65536;
  p->regsPerMultiprocessor = 65536;
  p->sharedMemPerBlock = 48 << 10;
  p->sharedMemPerBlockOptin = 227 << 10;
  p->sharedMemPerMultiprocessor = 228 << 10;
  p->reservedSharedMemPerBlock = 1 << 10;
  p->totalConstMem = 64 << 10;
  p->l2CacheSize = 50 << 20;
  p->memoryBusWidth = 5120;
  p->unifiedAddressing = 1;
  p->canMapHostMemory = 1;
  p->concurrentKernels = 1;
  p->asyncEngineCount = 2;
  p->warpSize = 32;
  p->pciDeviceID = d;
  return cudaSuccess;
}
#endif  // GPUSIM_CUDA12
GPUSIM_EXPORT cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr attr, int d) {
  READY_WITHOUT_CONTEXT();
  if (!v) return ret(cudaErrorInvalidValue);
  if (!valid_device(d)) return ret(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrComputeCapabilityMajor: *v = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *v = 0; break;
    case cudaDevAttrMultiProcessorCount: *v = 132; break;
    case cudaDevAttrMaxThreadsPerBlock: *v = 1024; break;
    case cudaDevAttrMaxBlockDimX: *v = 1024; break;
    case cudaDevAttrMaxBlockDimY: *v = 1024; break;
    case cudaDevAttrMaxBlockDimZ: *v = 64; break;
    case cudaDevAttrMaxGridDimX: *v = 0x7fffffff; break;
    case cudaDevAttrMaxGridDimY: *v = 65535; break;
    case cudaDevAttrMaxGridDimZ: *v = 65535; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *v = 2048; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *v = 32; break;
    case cudaDevAttrMaxRegistersPerBlock: *v = 65536; break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *v = 65536; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = 48 << 10; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = 227 << 10; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = 228 << 10; break;
    case cudaDevAttrReservedSharedMemoryPerBlock: *v = 1 << 10; break;
    case cudaDevAttrWarpSize: *v = 32; break;
    case cudaDevAttrL2CacheSize: *v = 50 << 20; break;
    case cudaDevAttrUnifiedAddressing: *v = 1; break;
    case cudaDevAttrCanMapHostMemory: *v = 1; break;
    case cudaDevAttrMemoryPoolsSupported: *v = 1; break;
    case cudaDevAttrAsyncEngineCount: *v = 2; break;
    case cudaDevAttrGPUDirectRDMASupported: *v = 1; break;
    default: *v = 0; break;
  }
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  READY();
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaDeviceSynchronize(void) {
  READY();
  count_call(Counted::kCudaDeviceSynchronize);
  if (cudaError_t e = refuse_in_capture()) return ret(e);
  sync_device(current_device());
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaDeviceReset(void) {
  READY();
  sync_device(current_device());
  return cudaSuccess;
}

// ---- streams ----
GPUSIM_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned flags, int priority) {
  READY();
  if (!s || (flags & ~cudaStreamNonBlocking)) return ret(cudaErrorInvalidValue);
  *s = new_stream(current_device(), flags, priority);
  return cudaSuccess;
}
// Note [Internal calls] (sim.h): the two shorter forms are not calls of the
// exported cudaStreamCreateWithPriority.
GPUSIM_INTERNAL_ALIAS(cudaError_t, cudaStreamCreateWithPriority, (cudaStream_t* s, unsigned flags, int priority));
GPUSIM_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  return gpusim_internal_cudaStreamCreateWithPriority(s, flags, 0);
}
GPUSIM_EXPORT cudaError_t cudaStreamCreate(cudaStream_t* s) {
  return gpusim_internal_cudaStreamCreateWithPriority(s, 0, 0);
}
GPUSIM_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t h) {
  READY();
  if (h == nullptr || h == cudaStreamLegacy || h == cudaStreamPerThread) return ret(cudaErrorInvalidResourceHandle);
  STREAM(s, h, false);
  destroy_stream(s);
  return cudaSuccess;
}

#define GPUSIM_ARGS_cudaStreamSynchronize h
GPUSIM_BOTH(cudaError_t, cudaStreamSynchronize, (cudaStream_t h), _ptsz, {
  READY();
  count_call(Counted::kCudaStreamSynchronize);
  STREAM(s, h, ptds);
  return ret(stream_sync(s));
})
#define GPUSIM_ARGS_cudaStreamQuery h
GPUSIM_BOTH(cudaError_t, cudaStreamQuery, (cudaStream_t h), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  return ret(stream_query(s));
})
#define GPUSIM_ARGS_cudaStreamWaitEvent h, e, flags
GPUSIM_BOTH(cudaError_t, cudaStreamWaitEvent, (cudaStream_t h, cudaEvent_t e, unsigned flags), _ptsz, {
  READY();
  (void)flags;
  STREAM(s, h, ptds);
  if (!e) return ret(cudaErrorInvalidResourceHandle);
  if (e->ipc) ipc_event_wait(s, e);
  else wait_event(s, e);
  return cudaSuccess;
})
#define GPUSIM_ARGS_cudaStreamGetFlags h, flags
GPUSIM_BOTH(cudaError_t, cudaStreamGetFlags, (cudaStream_t h, unsigned* flags), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  if (!flags) return ret(cudaErrorInvalidValue);
  *flags = s->flags;
  return cudaSuccess;
})
#define GPUSIM_ARGS_cudaStreamGetPriority h, priority
GPUSIM_BOTH(cudaError_t, cudaStreamGetPriority, (cudaStream_t h, int* priority), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  if (!priority) return ret(cudaErrorInvalidValue);
  *priority = s->priority;
  return cudaSuccess;
})
#define GPUSIM_ARGS_cudaStreamGetDevice h, device
GPUSIM_BOTH(cudaError_t, cudaStreamGetDevice, (cudaStream_t h, int* device), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  if (!device) return ret(cudaErrorInvalidValue);
  *device = s->device;
  return cudaSuccess;
})
#define GPUSIM_ARGS_cudaLaunchHostFunc h, fn, data
GPUSIM_BOTH(cudaError_t, cudaLaunchHostFunc, (cudaStream_t h, cudaHostFn_t fn, void* data), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  if (!fn) return ret(cudaErrorInvalidValue);
  if (cudaError_t e = check_legacy(s)) return ret(e);
  enqueue(s, [fn, data] { fn(data); });
  return cudaSuccess;
})
#define GPUSIM_ARGS_cudaStreamAddCallback h, cb, data, flags
GPUSIM_BOTH(cudaError_t, cudaStreamAddCallback,
            (cudaStream_t h, cudaStreamCallback_t cb, void* data, unsigned flags), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  if (!cb || flags) return ret(cudaErrorInvalidValue);
  enqueue(s, [h, cb, data] { cb(h, cudaSuccess, data); });
  return cudaSuccess;
})
#define GPUSIM_ARGS_cudaStreamBeginCapture h, mode
GPUSIM_BOTH(cudaError_t, cudaStreamBeginCapture, (cudaStream_t h, cudaStreamCaptureMode mode), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  return ret(begin_capture(s, mode));
})
#define GPUSIM_ARGS_cudaStreamEndCapture h, graph
GPUSIM_BOTH(cudaError_t, cudaStreamEndCapture, (cudaStream_t h, cudaGraph_t* graph), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  if (!graph) return ret(cudaErrorInvalidValue);
  return ret(end_capture(s, graph));
})
#define GPUSIM_ARGS_cudaStreamIsCapturing h, status
GPUSIM_BOTH(cudaError_t, cudaStreamIsCapturing, (cudaStream_t h, cudaStreamCaptureStatus* status), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  return ret(is_capturing_status(s, status));
})

// ---- events ----
GPUSIM_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned flags) {
  READY();
  if (!e) return ret(cudaErrorInvalidValue);
  // "cudaEventInterprocess must be specified along with
  // cudaEventDisableTiming" (cudaEventCreateWithFlags).
  if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)) return ret(cudaErrorInvalidValue);
  auto* ev = new CUevent_st();
  ev->flags = flags;
  if ((flags & cudaEventInterprocess) && !ipc_event_create(ev)) {
    delete ev;
    return ret(cudaErrorMemoryAllocation);
  }
  *e = ev;
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, 0); }
GPUSIM_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t e) {
  READY();
  if (!e) return ret(cudaErrorInvalidResourceHandle);
  if (e->ipc) ipc_event_destroy(e);
  delete e;
  return cudaSuccess;
}
#define GPUSIM_ARGS_cudaEventRecordWithFlags e, h, flags
GPUSIM_BOTH(cudaError_t, cudaEventRecordWithFlags, (cudaEvent_t e, cudaStream_t h, unsigned flags), _ptsz, {
  READY();
  count_call(Counted::kCudaEventRecord);
  (void)flags;
  STREAM(s, h, ptds);
  if (!e) return ret(cudaErrorInvalidResourceHandle);
  if (cudaError_t err = check_legacy(s)) return ret(err);
  charge(config().event_record_us);
  record_event(e, s);
  if (e->ipc) ipc_event_record(e, s);
  return cudaSuccess;
})
#define GPUSIM_ARGS_cudaEventRecord e, h
GPUSIM_BOTH(cudaError_t, cudaEventRecord, (cudaEvent_t e, cudaStream_t h), _ptsz, {
  return cudaEventRecordWithFlags_impl(ptds, e, h, 0);
})
// Querying or waiting for an event is a potentially unsafe call while a
// global-mode capture runs (PyTorch's allocator avoids it for that reason):
// refused, and the capture invalidated.
GPUSIM_EXPORT cudaError_t cudaEventQuery(cudaEvent_t e) {
  READY();
  if (!e) return ret(cudaErrorInvalidResourceHandle);
  if (cudaError_t r = refuse_in_capture()) return ret(r);
  return (e->ipc ? ipc_event_done(e) : event_done(e)) ? cudaSuccess : cudaErrorNotReady;
}
GPUSIM_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  READY();
  count_call(Counted::kCudaEventSynchronize);
  if (!e) return ret(cudaErrorInvalidResourceHandle);
  if (cudaError_t r = refuse_in_capture()) return ret(r);
  if (e->ipc) ipc_event_sync(e);
  else sync_event(e);
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  READY();
  if (!ms || !a || !b) return ret(cudaErrorInvalidValue);
  if ((a->flags | b->flags) & cudaEventDisableTiming) return ret(cudaErrorInvalidResourceHandle);
  if (!a->stamp_ns || !b->stamp_ns) return ret(cudaErrorInvalidResourceHandle);
  if (!event_done(a) || !event_done(b)) return cudaErrorNotReady;
  *ms = static_cast<float>((b->stamp_ns->load() - a->stamp_ns->load()) / 1e6);
  return cudaSuccess;
}

// ---- graphs ----
GPUSIM_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t g, unsigned long long flags) {
  READY();
  (void)flags;
  if (!exec || !g) return ret(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st{g->nodes, g->user_objects};
  for (auto& [o, n] : g->user_objects) o->refs.fetch_add(n);
  return cudaSuccess;
}
GPUSIM_INTERNAL_ALIAS(cudaError_t, cudaGraphInstantiate,
                      (cudaGraphExec_t* exec, cudaGraph_t g, unsigned long long flags));
#define GPUSIM_ARGS_cudaGraphLaunch exec, h
GPUSIM_BOTH(cudaError_t, cudaGraphLaunch, (cudaGraphExec_t exec, cudaStream_t h), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  if (!exec) return ret(cudaErrorInvalidValue);
  launch_graph(exec, s);
  return cudaSuccess;
})
// Destroying a graph or an executable graph releases the user-object
// references it holds. CUDA may defer a destructor until the executable
// graph's launched work is done; here it runs at once (what gpuslack's
// destructor does, fencing the blocks, is safe either way).
GPUSIM_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  if (g)
    for (auto& [o, n] : g->user_objects) release_user_object(o, n);
  delete g;
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
  if (e)
    for (auto& [o, n] : e->user_objects) release_user_object(o, n);
  delete e;
  return cudaSuccess;
}

