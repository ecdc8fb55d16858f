// libcudart.so.13 of the simulated device: the rest of what PyTorch's
// libraries link against, beyond cudart.cc's graphs and streams.
//
//   - capture queries (cudaStreamGetCaptureInfo: status, id, graph; no
//     dependency nodes, a captured graph is a sequence),
//     cudaThreadExchangeStreamCaptureMode (per thread; a relaxed thread's
//     unsafe calls are not refused: refuse_in_capture in cudart.cc);
//   - capture into an existing graph (cudaStreamBeginCaptureToGraph, with
//     no dependencies: appended in order);
//   - graph editing that PyTorch links but the simulated graphs, sequences
//     of captured ops, cannot express (adding nodes, conditional handles,
//     capture into a graph after given nodes): cudaErrorNotSupported;
//   - user objects: reference counted, destroyed at the last release; a
//     graph that retains one keeps it forever;
//   - device facts: PCI bus id, graph memory attributes (none used);
//   - memory pools' attributes and access (recorded as nothing: the pools of
//     cudart_memory.cc have no thresholds);
//   (IPC of memory and events: cudart_ipc.cc.)
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "cudart_internal.h"

using namespace gpusim;
using namespace gpusim::rt;

// Note [Internal calls] (sim.h): defined in cudart.cc.
GPUSIM_INTERNAL_DECL(cudaError_t, cudaGraphInstantiate,
                     (cudaGraphExec_t* exec, cudaGraph_t g, unsigned long long flags));


// ---- capture ----
// The query as CUDA 13 declares it (cudaStreamGetCaptureInfo); CUDA 12
// exports it as _v3 (12.3 on), the same without edges as _v2, and under
// the plain name the three-argument query of CUDA 11.
static cudaError_t capture_info(bool ptds, cudaStream_t h, cudaStreamCaptureStatus* status, unsigned long long* id,
                                cudaGraph_t* graph, const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                size_t* n) {
  READY();
  STREAM(s, h, ptds);
  if (!status) return ret(cudaErrorInvalidValue);
  if (s->legacy && legacy_use_conflicts(s->device)) return ret(cudaErrorStreamCaptureImplicit);
  std::lock_guard<std::mutex> l(core().mu);
  CUgraph_st* g = s->capture_graph;
  if (!g) *status = cudaStreamCaptureStatusNone;
  else *status = s->capture_invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  if (id) *id = reinterpret_cast<uintptr_t>(g);
  if (graph) *graph = g;
  if (deps) *deps = nullptr;
  if (edges) *edges = nullptr;
  if (n) *n = 0;
  return cudaSuccess;
}
// Exports `name` (NULL stream = legacy) and `name_ptsz` (NULL = per-thread).
#define GPUSIM_CAPTURE_INFO_BOTH(name, params, ...)                                          \
  GPUSIM_EXPORT cudaError_t name params { return capture_info(false, __VA_ARGS__); }        \
  GPUSIM_EXPORT cudaError_t name##_ptsz params { return capture_info(true, __VA_ARGS__); }
#ifdef GPUSIM_CUDA12
GPUSIM_CAPTURE_INFO_BOTH(cudaStreamGetCaptureInfo,
                         (cudaStream_t h, cudaStreamCaptureStatus* status, unsigned long long* id), h, status, id,
                         nullptr, nullptr, nullptr, nullptr)
GPUSIM_CAPTURE_INFO_BOTH(cudaStreamGetCaptureInfo_v2,
                         (cudaStream_t h, cudaStreamCaptureStatus* status, unsigned long long* id, cudaGraph_t* graph,
                          const cudaGraphNode_t** deps, size_t* n),
                         h, status, id, graph, deps, nullptr, n)
GPUSIM_CAPTURE_INFO_BOTH(cudaStreamGetCaptureInfo_v3,
                         (cudaStream_t h, cudaStreamCaptureStatus* status, unsigned long long* id, cudaGraph_t* graph,
                          const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges, size_t* n),
                         h, status, id, graph, deps, edges, n)
#else
GPUSIM_CAPTURE_INFO_BOTH(cudaStreamGetCaptureInfo,
                         (cudaStream_t h, cudaStreamCaptureStatus* status, unsigned long long* id, cudaGraph_t* graph,
                          const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges, size_t* n),
                         h, status, id, graph, deps, edges, n)
#endif
#undef GPUSIM_CAPTURE_INFO_BOTH
#define GPUSIM_ARGS_cudaStreamUpdateCaptureDependencies h, deps, edges, n, flags
GPUSIM_BOTH(cudaError_t, cudaStreamUpdateCaptureDependencies,
            (cudaStream_t h, cudaGraphNode_t* deps, const cudaGraphEdgeData* edges, size_t n, unsigned flags),
            _ptsz, {
  READY();
  (void)deps, (void)edges, (void)flags;
  STREAM(s, h, ptds);
  if (!is_capturing(s)) return ret(cudaErrorIllegalState);
  if (n) return ret(cudaErrorNotSupported);  // a captured graph is a sequence
  return cudaSuccess;
})
#define GPUSIM_ARGS_cudaStreamBeginCaptureToGraph h, graph, deps, edges, n, mode
GPUSIM_BOTH(cudaError_t, cudaStreamBeginCaptureToGraph,
            (cudaStream_t h, cudaGraph_t graph, const cudaGraphNode_t* deps, const cudaGraphEdgeData* edges,
             size_t n, cudaStreamCaptureMode mode),
            _ptsz, {
  // Captures into `graph`, returned by cudaStreamEndCapture (the Runtime
  // API's description); with dependencies, not supported: a simulated graph
  // is a sequence of ops.
  (void)edges;
  READY();
  STREAM(s, h, ptds);
  if (!graph || (n && !deps)) return ret(cudaErrorInvalidValue);
  if (n) return ret(cudaErrorNotSupported);
  return ret(begin_capture(s, mode, graph));
})
GPUSIM_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (!mode) return ret(cudaErrorInvalidValue);
  std::swap(*mode, t_capture_mode);
  return cudaSuccess;
}

// ---- graphs ----
// An empty graph, for cudaStreamBeginCaptureToGraph ("flags: Graph creation
// flags, must be 0").
GPUSIM_EXPORT cudaError_t cudaGraphCreate(cudaGraph_t* g, unsigned int flags) {
  if (!g || flags) return ret(cudaErrorInvalidValue);
  *g = new CUgraph_st();
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t g,
                                                        unsigned long long flags) {
  return gpusim_internal_cudaGraphInstantiate(exec, g, flags);
}
// Nodes are named by their position (1-based, so that none is NULL).
GPUSIM_EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t* nodes, size_t* n) {
  if (!g || !n) return ret(cudaErrorInvalidValue);
  size_t count = g->nodes.size();
  if (nodes) {
    for (size_t i = 0; i < *n && i < count; ++i) nodes[i] = reinterpret_cast<cudaGraphNode_t>(i + 1);
    for (size_t i = count; i < *n; ++i) nodes[i] = nullptr;
  }
  *n = count;
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* deps,
                                                       cudaGraphEdgeData* edges, size_t* n) {
  if (!node || !n) return ret(cudaErrorInvalidValue);
  size_t index = reinterpret_cast<uintptr_t>(node);  // 1-based: its predecessor is index - 1
  size_t count = index > 1 ? 1 : 0;
  if (deps && *n >= 1 && count) deps[0] = reinterpret_cast<cudaGraphNode_t>(index - 1);
  if (edges && *n >= 1 && count) std::memset(edges, 0, sizeof(*edges));
  *n = count;
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaGraphAddNode(cudaGraphNode_t* node, cudaGraph_t g, const cudaGraphNode_t* deps,
                                           const cudaGraphEdgeData* edges, size_t n, cudaGraphNodeParams* params) {
  (void)node, (void)g, (void)deps, (void)edges, (void)n, (void)params;
  return ret(cudaErrorNotSupported);
}
GPUSIM_EXPORT cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle* handle, cudaGraph_t g,
                                                           unsigned default_value, unsigned flags) {
  (void)handle, (void)g, (void)default_value, (void)flags;
  return ret(cudaErrorNotSupported);
}

// ---- user objects ----
void gpusim::release_user_object(CUuserObject_st* o, unsigned count) {
  if (o->refs.fetch_sub(count) == static_cast<long>(count)) {
    o->destroy(o->ptr);
    delete o;
  }
}
GPUSIM_EXPORT cudaError_t cudaUserObjectCreate(cudaUserObject_t* out, void* ptr, cudaHostFn_t destroy,
                                               unsigned initial_refs, unsigned flags) {
  if (!out || !destroy || initial_refs == 0 || flags != cudaUserObjectNoDestructorSync)
    return ret(cudaErrorInvalidValue);
  auto* o = new CUuserObject_st();
  o->ptr = ptr;
  o->destroy = destroy;
  o->refs = initial_refs;
  *out = o;
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaUserObjectRelease(cudaUserObject_t o, unsigned count) {
  if (!o || count == 0) return ret(cudaErrorInvalidValue);
  gpusim::release_user_object(o, count);
  return cudaSuccess;
}
// The graph holds `count` references (taken from the caller's with
// cudaGraphUserObjectMove), released when it is destroyed; an executable
// graph instantiated from it takes references of its own (CUDA Programming
// Guide, "CUDA User Objects").
GPUSIM_EXPORT cudaError_t cudaGraphRetainUserObject(cudaGraph_t g, cudaUserObject_t o, unsigned count,
                                                    unsigned flags) {
  if (!g || !o || count == 0) return ret(cudaErrorInvalidValue);
  if (!(flags & cudaGraphUserObjectMove)) o->refs.fetch_add(count);
  g->user_objects.emplace_back(o, count);
  return cudaSuccess;
}

// ---- device facts ----
GPUSIM_EXPORT cudaError_t cudaDeviceGetPCIBusId(char* id, int len, int d) {
  READY();
  if (!id || len <= 0) return ret(cudaErrorInvalidValue);
  if (!valid_device(d)) return ret(cudaErrorInvalidDevice);
  std::snprintf(id, static_cast<size_t>(len), "0000:00:%02X.0", d);  // as cudaDeviceProp's pciDeviceID
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaDeviceGetGraphMemAttribute(int d, cudaGraphMemAttributeType attr, void* value) {
  READY();
  (void)attr;
  if (!value) return ret(cudaErrorInvalidValue);
  if (!valid_device(d)) return ret(cudaErrorInvalidDevice);
  *static_cast<cuuint64_t*>(value) = 0;  // graph memory nodes are not simulated
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaDeviceSetGraphMemAttribute(int d, cudaGraphMemAttributeType attr, void* value) {
  READY();
  (void)attr, (void)value;
  if (!valid_device(d)) return ret(cudaErrorInvalidDevice);
  return cudaSuccess;
}

// ---- memory pools ----
GPUSIM_EXPORT cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  READY();
  if (!pool || !value) return ret(cudaErrorInvalidValue);
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
      *static_cast<int*>(value) = 1;
      break;
    default:
      *static_cast<cuuint64_t*>(value) = 0;
      break;
  }
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  READY();
  (void)attr;
  if (!pool || !value) return ret(cudaErrorInvalidValue);
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaMemPoolSetAccess(cudaMemPool_t pool, const cudaMemAccessDesc* desc, size_t n) {
  READY();
  if (!pool || (n && !desc)) return ret(cudaErrorInvalidValue);
  return cudaSuccess;
}
GPUSIM_EXPORT cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep) {
  READY();
  (void)keep;
  if (!pool) return ret(cudaErrorInvalidValue);
  return cudaSuccess;
}
