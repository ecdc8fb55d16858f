// libcudart.so.13 of the simulated device: the CUDA Runtime API entry points
// gpuslack and its tests use, with the symbol version node of the real
// library (cudart.map), so binaries built against the toolkit bind to it.
//
// Semantics follow the CUDA Runtime API's "API synchronization behavior";
// each place where it matters says which rule it implements. The _ptsz/_ptds
// variants differ only in what a NULL stream means (the per-thread default
// stream instead of the legacy one).
#include <sys/mman.h>

#include <cstring>
#include <vector>

#include "gpusim.h"
#include "sim.h"

using namespace gpusim;

namespace {

thread_local cudaError_t t_last_error = cudaSuccess;

cudaError_t ret(cudaError_t e) {
  if (e != cudaSuccess && e != cudaErrorNotReady) t_last_error = e;
  return e;
}

// The state every call checks first: a usable driver and a device.
cudaError_t ready() {
  if (config().no_driver) return cudaErrorInsufficientDriver;
  if (config().device_count == 0) return cudaErrorNoDevice;
  return cudaSuccess;
}

#define READY()                               \
  do {                                        \
    if (cudaError_t e_ = ready()) return ret(e_); \
  } while (0)

#define STREAM(var, handle, ptds)                          \
  CUstream_st* var = resolve(handle, ptds);                \
  if (!var) return ret(cudaErrorInvalidResourceHandle)

constexpr size_t kAlign = 512;
size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Calls that CUDA refuses while a stream captures in global mode.
cudaError_t refuse_in_capture() {
  if (!any_global_capture()) return cudaSuccess;
  std::lock_guard<std::mutex> l(core().mu);
  for (CUstream_st* s : core().streams)
    if (s->capture_graph && s->capture_mode == cudaStreamCaptureModeGlobal) s->capture_invalidated = true;
  return cudaErrorStreamCaptureUnsupported;
}

// Using the legacy stream while a blocking stream captures.
cudaError_t check_legacy(CUstream_st* s) {
  if (s->legacy && legacy_use_conflicts(s->device)) return cudaErrorStreamCaptureImplicit;
  return cudaSuccess;
}

// ---------------------------------------------------------------- copies --

// A (possibly 2D) copy: `height` rows of `width` bytes.
struct Rows {
  char* dst;
  const char* src;
  size_t dpitch, spitch, width, height;
  size_t bytes() const { return width * height; }
  size_t dst_span() const { return height ? dpitch * (height - 1) + width : 0; }
  size_t src_span() const { return height ? spitch * (height - 1) + width : 0; }
  void run() const {
    if (dpitch == width && spitch == width) {
      std::memmove(dst, src, bytes());
      return;
    }
    for (size_t r = 0; r < height; ++r) std::memmove(dst + r * dpitch, src + r * spitch, width);
  }
};

enum class Api { kAsync, kSync };

// A GPU op that performs `rows` and takes `us` of GPU time.
std::function<void()> timed(Rows rows, double us) {
  return [rows, us] {
    auto t0 = Clock::now();
    rows.run();
    wait_until(after(t0, us));
  };
}

cudaError_t copy(Rows c, CUstream_st* s, Api api) {
  if (c.bytes() == 0) return cudaSuccess;
  int sdev = 0, ddev = 0;
  Where src = classify(c.src, c.src_span(), &sdev);
  Where dst = classify(c.dst, c.dst_span(), &ddev);
  // A device pointer must lie inside a live allocation.
  Region r;
  if ((src == Where::kPageable && Memory::get().find(c.src, 1, &r)) ||
      (dst == Where::kPageable && Memory::get().find(c.dst, 1, &r)))
    return cudaErrorInvalidValue;
  if (cudaError_t e = check_legacy(s)) return e;
  const Config& cfg = config();
  bool host_src = src != Where::kDevice, host_dst = dst != Where::kDevice;
  bool pageable = src == Where::kPageable || dst == Where::kPageable;

  if (is_capturing(s) && (pageable || (host_src && host_dst))) {
    invalidate_capture(s);
    return cudaErrorStreamCaptureUnsupported;
  }

  if (host_src && host_dst) {
    // Host to host: fully synchronous with respect to the host.
    drain_stream(s);
    auto t0 = Clock::now();
    c.run();
    wait_until(after(t0, transfer_us(c.bytes(), cfg.pageable_gbps)));
    return cudaSuccess;
  }
  if (host_src && src == Where::kPageable) {
    // Pageable to device: the driver synchronizes the stream, copies the
    // buffer to pinned staging and returns; the DMA may still be running.
    drain_stream(s);
    auto t0 = Clock::now();
    auto staged = std::make_shared<std::vector<char>>(c.bytes());
    Rows in{staged->data(), c.src, c.width, c.spitch, c.width, c.height};
    in.run();
    wait_until(after(t0, transfer_us(c.bytes(), cfg.pageable_gbps)));
    Rows dma{c.dst, staged->data(), c.dpitch, c.width, c.width, c.height};
    double us = cfg.copy_latency_us + transfer_us(c.bytes(), cfg.pinned_h2d_gbps);
    enqueue(s, [dma, us, staged] {
      auto t = Clock::now();
      dma.run();
      wait_until(after(t, us));
    });
    return cudaSuccess;
  }
  if (host_dst) {
    // Device to host: pageable returns only once complete (DMA to staging,
    // then the host copy); pinned is asynchronous for the Async API and
    // synchronous for cudaMemcpy.
    double us = cfg.copy_latency_us + transfer_us(c.bytes(), cfg.pinned_d2h_gbps);
    if (dst == Where::kPageable) us += transfer_us(c.bytes(), cfg.pageable_gbps);
    uint64_t seq = enqueue(s, timed(c, us));
    if (dst == Where::kPageable || api == Api::kSync) wait_op(s, seq);
    return cudaSuccess;
  }
  if (host_src) {
    // Pinned to device: asynchronous for the Async API; cudaMemcpy is
    // synchronous with respect to the host.
    double us = cfg.copy_latency_us + transfer_us(c.bytes(), cfg.pinned_h2d_gbps);
    uint64_t seq = enqueue(s, timed(c, us));
    if (api == Api::kSync) wait_op(s, seq);
    return cudaSuccess;
  }
  // Device to device (same or peer): no host-side synchronization.
  double us = cfg.copy_latency_us + transfer_us(2 * c.bytes(), cfg.d2d_gbps);
  enqueue(s, timed(c, us));
  return cudaSuccess;
}

cudaError_t memset_rows(char* dst, size_t pitch, int value, size_t width, size_t height, CUstream_st* s) {
  size_t span = height ? pitch * (height - 1) + width : 0;
  if (span == 0) return cudaSuccess;
  Where w = classify(dst, span);
  if (w == Where::kPageable) return cudaErrorInvalidValue;
  if (cudaError_t e = check_legacy(s)) return e;
  double us = config().copy_latency_us + transfer_us(width * height, config().memset_gbps);
  uint64_t seq = enqueue(s, [=] {
    auto t0 = Clock::now();
    for (size_t r = 0; r < height; ++r) std::memset(dst + r * pitch, value, width);
    wait_until(after(t0, us));
  });
  // Memsets are asynchronous, except to pinned host memory.
  if (w == Where::kPinned && seq) wait_op(s, seq);
  return cudaSuccess;
}

// ------------------------------------------------------------ allocation --

cudaError_t device_alloc(void** p, size_t size, MemKind kind, int device, double cost_us) {
  if (!p) return cudaErrorInvalidValue;
  *p = nullptr;
  if (size == 0) return cudaSuccess;
  size_t charged = round_up(size, kAlign);
  if (!Memory::get().reserve(device, charged)) return cudaErrorMemoryAllocation;
  void* mem = Memory::map_anonymous(size);
  if (!mem) {
    Memory::get().unreserve(device, charged);
    return cudaErrorMemoryAllocation;
  }
  charge(cost_us);
  Region r;
  r.base = reinterpret_cast<uintptr_t>(mem);
  r.size = size;
  r.kind = kind;
  r.device = device;
  r.charged = charged;
  Memory::get().add(r);
  *p = mem;
  return cudaSuccess;
}

void release(const Region& r) {
  Memory::unmap(reinterpret_cast<void*>(r.base), r.size);
  if (r.charged) Memory::get().unreserve(r.device, r.charged);
}

cudaError_t host_alloc(void** p, size_t size, unsigned flags) {
  if (!p) return cudaErrorInvalidValue;
  *p = nullptr;
  if (cudaError_t e = refuse_in_capture()) return e;
  if (should_fail("cudaHostAlloc")) return cudaErrorMemoryAllocation;
  if (size == 0) return cudaSuccess;
  void* mem = Memory::map_anonymous(size);
  if (!mem) return cudaErrorMemoryAllocation;
  // Page-locking touches every page: that is where the cost comes from.
  charge(config().host_alloc_us + transfer_us(size, config().host_pin_gbps));
  device_barrier(current_device());
  Region r;
  r.base = reinterpret_cast<uintptr_t>(mem);
  r.size = size;
  r.kind = MemKind::kPinned;
  r.device = current_device();
  r.flags = flags;
  Memory::get().add(r);
  *p = mem;
  return cudaSuccess;
}

cudaError_t malloc_async(void** p, size_t size, CUstream_st* s) {
  if (is_capturing(s)) {
    // Graph memory nodes are not simulated.
    invalidate_capture(s);
    return cudaErrorStreamCaptureUnsupported;
  }
  if (should_fail("cudaMallocAsync")) return cudaErrorMemoryAllocation;
  return device_alloc(p, size, MemKind::kDeviceAsync, s->device, config().malloc_async_us);
}

cudaError_t free_async(void* p, CUstream_st* s) {
  if (!p) return cudaSuccess;
  if (is_capturing(s)) {
    invalidate_capture(s);
    return cudaErrorStreamCaptureUnsupported;
  }
  Region r;
  if (!Memory::get().find(p, 1, &r) || r.base != reinterpret_cast<uintptr_t>(p) ||
      r.kind != MemKind::kDeviceAsync)
    return cudaErrorInvalidValue;
  charge(config().malloc_async_us);
  // Stream-ordered: the memory goes back when the stream reaches the free.
  enqueue(s, [r] {
    if (Memory::get().remove(r.base, nullptr)) release(r);
  });
  return cudaSuccess;
}

cudaMemPool_t default_pool(int device) {
  return reinterpret_cast<cudaMemPool_t>(static_cast<uintptr_t>(0x1000 + device));
}

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

struct HostFnCall {
  cudaHostFn_t fn;
  void* data;
};

}  // namespace

// ======================================================================
// Exported entry points
// ======================================================================

// ---- errors and versions ----
GPUSIM_EXPORT cudaError_t cudaGetLastError(void) {
  cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}
GPUSIM_EXPORT cudaError_t cudaPeekAtLastError(void) { return t_last_error; }
GPUSIM_EXPORT const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
#define NAME(x) case x: return #x;
    NAME(cudaSuccess) NAME(cudaErrorInvalidValue) NAME(cudaErrorMemoryAllocation)
    NAME(cudaErrorInsufficientDriver) NAME(cudaErrorNoDevice) NAME(cudaErrorInvalidDevice)
    NAME(cudaErrorInvalidResourceHandle) NAME(cudaErrorNotReady) NAME(cudaErrorIllegalState)
    NAME(cudaErrorStreamCaptureUnsupported) NAME(cudaErrorStreamCaptureInvalidated)
    NAME(cudaErrorStreamCaptureImplicit) NAME(cudaErrorHostMemoryAlreadyRegistered)
    NAME(cudaErrorHostMemoryNotRegistered) NAME(cudaErrorNotSupported)
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
  *v = CUDART_VERSION;
  return cudaSuccess;
}

// ---- devices ----
GPUSIM_EXPORT cudaError_t cudaGetDeviceCount(int* n) {
  if (!n) return ret(cudaErrorInvalidValue);
  *n = 0;
  READY();
  *n = config().device_count;
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaGetDevice(int* d) {
  READY();
  if (!d) return ret(cudaErrorInvalidValue);
  *d = current_device();
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaSetDevice(int d) {
  READY();
  if (!valid_device(d)) return ret(cudaErrorInvalidDevice);
  set_current_device(d);
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  READY();
  if (!p) return ret(cudaErrorInvalidValue);
  if (!valid_device(d)) return ret(cudaErrorInvalidDevice);
  std::memset(p, 0, sizeof(*p));
  std::snprintf(p->name, sizeof(p->name), "gpusim simulated device %d", d);
  p->totalGlobalMem = config().device_bytes;
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = 132;
  p->unifiedAddressing = 1;
  p->canMapHostMemory = 1;
  p->concurrentKernels = 1;
  p->asyncEngineCount = 2;
  p->warpSize = 32;
  p->pciDeviceID = d;
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr attr, int d) {
  READY();
  if (!v) return ret(cudaErrorInvalidValue);
  if (!valid_device(d)) return ret(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrComputeCapabilityMajor: *v = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *v = 0; break;
    case cudaDevAttrMultiProcessorCount: *v = 132; break;
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
GPUSIM_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  return cudaStreamCreateWithPriority(s, flags, 0);
}
GPUSIM_EXPORT cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithPriority(s, 0, 0); }
GPUSIM_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t h) {
  READY();
  if (h == nullptr || h == cudaStreamLegacy || h == cudaStreamPerThread) return ret(cudaErrorInvalidResourceHandle);
  STREAM(s, h, false);
  destroy_stream(s);
  return cudaSuccess;
}

// Defines name_impl(bool ptds, params...) with the body given, and exports
// `name` (NULL stream = legacy) and `name<suffix>` (NULL = per-thread).
#define GPUSIM_BOTH(ret_t, name, params, ptds_suffix, ...)             \
  static ret_t name##_impl(bool ptds, GPUSIM_UNPAREN params) __VA_ARGS__ \
  GPUSIM_EXPORT ret_t name params { return name##_impl(false, GPUSIM_ARGS_##name); } \
  GPUSIM_EXPORT ret_t name##ptds_suffix params { return name##_impl(true, GPUSIM_ARGS_##name); }
#define GPUSIM_UNPAREN(...) __VA_ARGS__

#define GPUSIM_ARGS_cudaStreamSynchronize h
GPUSIM_BOTH(cudaError_t, cudaStreamSynchronize, (cudaStream_t h), _ptsz, {
  READY();
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
  wait_event(s, e);
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
  *e = new CUevent_st();
  (*e)->flags = flags;
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, 0); }
GPUSIM_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t e) {
  READY();
  if (!e) return ret(cudaErrorInvalidResourceHandle);
  delete e;
  return cudaSuccess;
}
#define GPUSIM_ARGS_cudaEventRecordWithFlags e, h, flags
GPUSIM_BOTH(cudaError_t, cudaEventRecordWithFlags, (cudaEvent_t e, cudaStream_t h, unsigned flags), _ptsz, {
  READY();
  (void)flags;
  STREAM(s, h, ptds);
  if (!e) return ret(cudaErrorInvalidResourceHandle);
  if (cudaError_t err = check_legacy(s)) return ret(err);
  charge(config().event_record_us);
  record_event(e, s);
  return cudaSuccess;
})
#define GPUSIM_ARGS_cudaEventRecord e, h
GPUSIM_BOTH(cudaError_t, cudaEventRecord, (cudaEvent_t e, cudaStream_t h), _ptsz, {
  return cudaEventRecordWithFlags_impl(ptds, e, h, 0);
})
GPUSIM_EXPORT cudaError_t cudaEventQuery(cudaEvent_t e) {
  READY();
  if (!e) return ret(cudaErrorInvalidResourceHandle);
  return event_done(e) ? cudaSuccess : cudaErrorNotReady;
}
GPUSIM_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  READY();
  if (!e) return ret(cudaErrorInvalidResourceHandle);
  sync_event(e);
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
  *exec = new CUgraphExec_st{g->nodes};
  return cudaSuccess;
}
#define GPUSIM_ARGS_cudaGraphLaunch exec, h
GPUSIM_BOTH(cudaError_t, cudaGraphLaunch, (cudaGraphExec_t exec, cudaStream_t h), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  if (!exec) return ret(cudaErrorInvalidValue);
  launch_graph(exec, s);
  return cudaSuccess;
})
GPUSIM_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  delete g;
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
  delete e;
  return cudaSuccess;
}

// ---- device memory ----
GPUSIM_EXPORT cudaError_t cudaMalloc(void** p, size_t size) {
  READY();
  if (!p) return ret(cudaErrorInvalidValue);
  *p = nullptr;
  if (cudaError_t e = refuse_in_capture()) return ret(e);
  if (should_fail("cudaMalloc")) return ret(cudaErrorMemoryAllocation);
  // A device allocation is an implicit synchronization point (Programming
  // Guide, "Implicit Synchronization"); in practice it waits for the device.
  if (config().malloc_syncs) sync_device(current_device());
  double gib = static_cast<double>(size) / (1ull << 30);
  return ret(device_alloc(p, size, MemKind::kDevice, current_device(),
                          config().malloc_us + gib * config().malloc_per_gib_us));
}
GPUSIM_EXPORT cudaError_t cudaFree(void* p) {
  READY();
  if (!p) return cudaSuccess;
  if (cudaError_t e = refuse_in_capture()) return ret(e);
  Region r;
  if (!Memory::get().find(p, 1, &r) || r.base != reinterpret_cast<uintptr_t>(p) ||
      (r.kind != MemKind::kDevice && r.kind != MemKind::kManaged))
    return ret(cudaErrorInvalidValue);
  // cudaFree waits for the whole device: queued work may still use `p`.
  sync_device(r.device);
  charge(config().free_us);
  Memory::get().remove(r.base, nullptr);
  release(r);
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaMallocManaged(void** p, size_t size, unsigned flags) {
  READY();
  (void)flags;
  if (cudaError_t e = refuse_in_capture()) return ret(e);
  return ret(device_alloc(p, size, MemKind::kManaged, current_device(), config().malloc_us));
}
GPUSIM_EXPORT cudaError_t cudaMallocPitch(void** p, size_t* pitch, size_t width, size_t height) {
  if (!pitch) return ret(cudaErrorInvalidValue);
  *pitch = round_up(width ? width : 1, kAlign);
  return cudaMalloc(p, *pitch * height);
}
GPUSIM_EXPORT cudaError_t cudaMalloc3D(cudaPitchedPtr* pp, cudaExtent ext) {
  if (!pp) return ret(cudaErrorInvalidValue);
  size_t pitch = 0;
  void* p = nullptr;
  cudaError_t e = cudaMallocPitch(&p, &pitch, ext.width, ext.height * ext.depth);
  if (e != cudaSuccess) return e;
  pp->ptr = p;
  pp->pitch = pitch;
  pp->xsize = ext.width;
  pp->ysize = ext.height;
  return cudaSuccess;
}
#define GPUSIM_ARGS_cudaMallocAsync p, size, h
GPUSIM_BOTH(cudaError_t, cudaMallocAsync, (void** p, size_t size, cudaStream_t h), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  return ret(malloc_async(p, size, s));
})
#define GPUSIM_ARGS_cudaMallocFromPoolAsync p, size, pool, h
GPUSIM_BOTH(cudaError_t, cudaMallocFromPoolAsync, (void** p, size_t size, cudaMemPool_t pool, cudaStream_t h),
            _ptsz, {
  READY();
  STREAM(s, h, ptds);
  if (pool != default_pool(s->device)) return ret(cudaErrorInvalidValue);
  return ret(malloc_async(p, size, s));
})
#define GPUSIM_ARGS_cudaFreeAsync p, h
GPUSIM_BOTH(cudaError_t, cudaFreeAsync, (void* p, cudaStream_t h), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  return ret(free_async(p, s));
})
GPUSIM_EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int d) {
  READY();
  if (!pool) return ret(cudaErrorInvalidValue);
  if (!valid_device(d)) return ret(cudaErrorInvalidDevice);
  *pool = default_pool(d);
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  READY();
  size_t cap = config().device_bytes, used = Memory::get().used(current_device());
  if (free_bytes) *free_bytes = used < cap ? cap - used : 0;
  if (total) *total = cap;
  return cudaSuccess;
}

// ---- host memory ----
GPUSIM_EXPORT cudaError_t cudaHostAlloc(void** p, size_t size, unsigned flags) {
  READY();
  return ret(host_alloc(p, size, flags));
}
GPUSIM_EXPORT cudaError_t cudaMallocHost(void** p, size_t size) {
  READY();
  return ret(host_alloc(p, size, cudaHostAllocDefault));
}
GPUSIM_EXPORT cudaError_t cudaFreeHost(void* p) {
  READY();
  if (!p) return cudaSuccess;
  if (cudaError_t e = refuse_in_capture()) return ret(e);
  Region r;
  if (!Memory::get().find(p, 1, &r) || r.base != reinterpret_cast<uintptr_t>(p) || r.kind != MemKind::kPinned)
    return ret(cudaErrorInvalidValue);
  // Like cudaFree, cudaFreeHost waits for the device.
  sync_device(r.device);
  charge(config().free_host_us);
  Memory::get().remove(r.base, nullptr);
  release(r);
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaHostRegister(void* p, size_t size, unsigned flags) {
  READY();
  if (!p || size == 0) return ret(cudaErrorInvalidValue);
  Region existing;
  if (Memory::get().find(p, 1, &existing)) return ret(cudaErrorHostMemoryAlreadyRegistered);
  charge(config().host_alloc_us + transfer_us(size, config().host_pin_gbps));
  Region r;
  r.base = reinterpret_cast<uintptr_t>(p);
  r.size = size;
  r.kind = MemKind::kRegistered;
  r.device = current_device();
  r.flags = flags;
  Memory::get().add(r);
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaHostUnregister(void* p) {
  READY();
  Region r;
  if (!p || !Memory::get().find(p, 1, &r) || r.kind != MemKind::kRegistered ||
      r.base != reinterpret_cast<uintptr_t>(p))
    return ret(cudaErrorHostMemoryNotRegistered);
  sync_device(r.device);
  Memory::get().remove(r.base, nullptr);
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaHostGetDevicePointer(void** dev, void* host, unsigned flags) {
  READY();
  (void)flags;
  if (!dev || classify(host, 1) != Where::kPinned) return ret(cudaErrorInvalidValue);
  *dev = host;  // unified addressing: the same address
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  READY();
  if (!a) return ret(cudaErrorInvalidValue);
  std::memset(a, 0, sizeof(*a));
  Region r;
  if (!Memory::get().find(p, 1, &r)) {
    a->type = cudaMemoryTypeUnregistered;
    a->device = cudaInvalidDeviceId;
    return cudaSuccess;
  }
  a->device = r.device;
  switch (r.kind) {
    case MemKind::kDevice:
    case MemKind::kDeviceAsync:
    case MemKind::kVmmReserve:
      a->type = cudaMemoryTypeDevice;
      a->devicePointer = const_cast<void*>(p);
      break;
    case MemKind::kManaged:
      a->type = cudaMemoryTypeManaged;
      a->devicePointer = a->hostPointer = const_cast<void*>(p);
      break;
    case MemKind::kPinned:
    case MemKind::kRegistered:
      a->type = cudaMemoryTypeHost;
      a->devicePointer = a->hostPointer = const_cast<void*>(p);
      break;
  }
  return cudaSuccess;
}

// ---- copies ----
#define GPUSIM_ARGS_cudaMemcpy dst, src, n, kind
GPUSIM_BOTH(cudaError_t, cudaMemcpy, (void* dst, const void* src, size_t n, cudaMemcpyKind kind), _ptds, {
  READY();
  (void)kind;
  STREAM(s, nullptr, ptds);
  return ret(copy({static_cast<char*>(dst), static_cast<const char*>(src), n, n, n, 1}, s, Api::kSync));
})
#define GPUSIM_ARGS_cudaMemcpyAsync dst, src, n, kind, h
GPUSIM_BOTH(cudaError_t, cudaMemcpyAsync,
            (void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t h), _ptsz, {
  READY();
  (void)kind;
  STREAM(s, h, ptds);
  return ret(copy({static_cast<char*>(dst), static_cast<const char*>(src), n, n, n, 1}, s, Api::kAsync));
})
#define GPUSIM_ARGS_cudaMemcpy2D dst, dpitch, src, spitch, w, h, kind
GPUSIM_BOTH(cudaError_t, cudaMemcpy2D,
            (void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h, cudaMemcpyKind kind),
            _ptds, {
  READY();
  (void)kind;
  if (w > dpitch || w > spitch) return ret(cudaErrorInvalidPitchValue);
  STREAM(s, nullptr, ptds);
  return ret(copy({static_cast<char*>(dst), static_cast<const char*>(src), dpitch, spitch, w, h}, s, Api::kSync));
})
#define GPUSIM_ARGS_cudaMemcpy2DAsync dst, dpitch, src, spitch, w, h, kind, hs
GPUSIM_BOTH(cudaError_t, cudaMemcpy2DAsync,
            (void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h, cudaMemcpyKind kind,
             cudaStream_t hs), _ptsz, {
  READY();
  (void)kind;
  if (w > dpitch || w > spitch) return ret(cudaErrorInvalidPitchValue);
  STREAM(s, hs, ptds);
  return ret(copy({static_cast<char*>(dst), static_cast<const char*>(src), dpitch, spitch, w, h}, s, Api::kAsync));
})
GPUSIM_EXPORT cudaError_t cudaMemcpyPeerAsync(void* dst, int dd, const void* src, int sd, size_t n, cudaStream_t h) {
  READY();
  if (!valid_device(dd) || !valid_device(sd)) return ret(cudaErrorInvalidDevice);
  STREAM(s, h, false);
  return ret(copy({static_cast<char*>(dst), static_cast<const char*>(src), n, n, n, 1}, s, Api::kAsync));
}
GPUSIM_EXPORT cudaError_t cudaMemcpyPeer(void* dst, int dd, const void* src, int sd, size_t n) {
  return cudaMemcpyPeerAsync(dst, dd, src, sd, n, nullptr);
}
#define GPUSIM_ARGS_cudaMemcpyBatchAsync dsts, srcs, sizes, count, attrs, idxs, nattrs, h
GPUSIM_BOTH(cudaError_t, cudaMemcpyBatchAsync,
            (void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count,
             cudaMemcpyAttributes* attrs, size_t* idxs, size_t nattrs, cudaStream_t h), _ptsz, {
  READY();
  (void)attrs; (void)idxs; (void)nattrs;
  if (!dsts || !srcs || !sizes || count == 0) return ret(cudaErrorInvalidValue);
  STREAM(s, h, ptds);
  for (size_t i = 0; i < count; ++i) {
    cudaError_t e = copy({static_cast<char*>(dsts[i]), static_cast<const char*>(srcs[i]), sizes[i], sizes[i],
                          sizes[i], 1}, s, Api::kAsync);
    if (e != cudaSuccess) return ret(e);
  }
  return cudaSuccess;
})
#define GPUSIM_ARGS_cudaMemset p, v, n
GPUSIM_BOTH(cudaError_t, cudaMemset, (void* p, int v, size_t n), _ptds, {
  READY();
  STREAM(s, nullptr, ptds);
  return ret(memset_rows(static_cast<char*>(p), n, v, n, 1, s));
})
#define GPUSIM_ARGS_cudaMemsetAsync p, v, n, h
GPUSIM_BOTH(cudaError_t, cudaMemsetAsync, (void* p, int v, size_t n, cudaStream_t h), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  return ret(memset_rows(static_cast<char*>(p), n, v, n, 1, s));
})
#define GPUSIM_ARGS_cudaMemset2D p, pitch, v, w, hgt
GPUSIM_BOTH(cudaError_t, cudaMemset2D, (void* p, size_t pitch, int v, size_t w, size_t hgt), _ptds, {
  READY();
  if (w > pitch) return ret(cudaErrorInvalidPitchValue);
  STREAM(s, nullptr, ptds);
  return ret(memset_rows(static_cast<char*>(p), pitch, v, w, hgt, s));
})
#define GPUSIM_ARGS_cudaMemset2DAsync p, pitch, v, w, hgt, h
GPUSIM_BOTH(cudaError_t, cudaMemset2DAsync, (void* p, size_t pitch, int v, size_t w, size_t hgt, cudaStream_t h),
            _ptsz, {
  READY();
  if (w > pitch) return ret(cudaErrorInvalidPitchValue);
  STREAM(s, h, ptds);
  return ret(memset_rows(static_cast<char*>(p), pitch, v, w, hgt, s));
})
