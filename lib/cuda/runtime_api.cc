#include "cuda/runtime_api.h"

#include <atomic>

#include "cuda/runtime_symbols.h"

namespace gpuslack {
namespace cuda {

// One function per runtime entry point (GPUSLACK_REAL_CALL, runtime_symbols.h).
#define GPUSLACK_RUNTIME_CALL(fn, symbol, params, args) \
  GPUSLACK_REAL_CALL(Library::kCudaRuntime, cudaError_t, cudaErrorSharedObjectInitFailed, fn, symbol, params, args)
GPUSLACK_RUNTIME_CALL(pointer_get_attributes, "cudaPointerGetAttributes",
                      (cudaPointerAttributes * attributes, const void* ptr), (attributes, ptr))
GPUSLACK_RUNTIME_CALL(peek_at_last_error, "cudaPeekAtLastError", (), ())
GPUSLACK_RUNTIME_CALL(get_last_error, "cudaGetLastError", (), ())
GPUSLACK_RUNTIME_CALL(driver_get_version, "cudaDriverGetVersion", (int* version), (version))
GPUSLACK_RUNTIME_CALL(get_device, "cudaGetDevice", (int* device), (device))
GPUSLACK_RUNTIME_CALL(set_device, "cudaSetDevice", (int device), (device))
GPUSLACK_RUNTIME_CALL(device_synchronize, "cudaDeviceSynchronize", (), ())
GPUSLACK_RUNTIME_CALL(device_can_access_peer, "cudaDeviceCanAccessPeer", (int* can, int device, int peer),
                      (can, device, peer))
GPUSLACK_RUNTIME_CALL(event_create, "cudaEventCreateWithFlags", (cudaEvent_t * event, unsigned int flags),
                      (event, flags))
GPUSLACK_RUNTIME_CALL(event_record, "cudaEventRecord", (cudaEvent_t event, cudaStream_t stream), (event, stream))
GPUSLACK_RUNTIME_CALL(event_query, "cudaEventQuery", (cudaEvent_t event), (event))
GPUSLACK_RUNTIME_CALL(event_synchronize, "cudaEventSynchronize", (cudaEvent_t event), (event))
GPUSLACK_RUNTIME_CALL(event_elapsed_ms, "cudaEventElapsedTime", (float* ms, cudaEvent_t start, cudaEvent_t end),
                      (ms, start, end))
GPUSLACK_RUNTIME_CALL(event_destroy, "cudaEventDestroy", (cudaEvent_t event), (event))
GPUSLACK_RUNTIME_CALL(stream_is_capturing, "cudaStreamIsCapturing",
                      (cudaStream_t stream, cudaStreamCaptureStatus * status), (stream, status))
GPUSLACK_RUNTIME_CALL(thread_exchange_stream_capture_mode, "cudaThreadExchangeStreamCaptureMode",
                      (cudaStreamCaptureMode * mode), (mode))
namespace {  // the full signatures; the header's functions fill in the rest
GPUSLACK_RUNTIME_CALL(stream_get_capture_info_full, "cudaStreamGetCaptureInfo",
                      (cudaStream_t stream, cudaStreamCaptureStatus * status, unsigned long long* id,
                       cudaGraph_t* graph, const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                       size_t* n),
                      (stream, status, id, graph, deps, edges, n))
// CUDA 12 exports the old three-argument call under this name; its
// status/id/graph query is cudaStreamGetCaptureInfo_v2 (every 12.x; _v3,
// from 12.3, adds only the edges gpuslack does not ask for).
GPUSLACK_RUNTIME_CALL(stream_get_capture_info_cuda12, "cudaStreamGetCaptureInfo_v2",
                      (cudaStream_t stream, cudaStreamCaptureStatus * status, unsigned long long* id,
                       cudaGraph_t* graph, const cudaGraphNode_t** deps, size_t* n),
                      (stream, status, id, graph, deps, n))
GPUSLACK_RUNTIME_CALL(user_object_create_full, "cudaUserObjectCreate",
                      (cudaUserObject_t * object, void* ptr, cudaHostFn_t destroy, unsigned int refs,
                       unsigned int flags),
                      (object, ptr, destroy, refs, flags))
GPUSLACK_RUNTIME_CALL(user_object_release_full, "cudaUserObjectRelease", (cudaUserObject_t object, unsigned int count),
                      (object, count))
GPUSLACK_RUNTIME_CALL(graph_retain_user_object_full, "cudaGraphRetainUserObject",
                      (cudaGraph_t graph, cudaUserObject_t object, unsigned int count, unsigned int flags),
                      (graph, object, count, flags))
}  // namespace
GPUSLACK_RUNTIME_CALL(host_alloc, "cudaHostAlloc", (void** p, size_t size, unsigned int flags), (p, size, flags))
GPUSLACK_RUNTIME_CALL(free_host, "cudaFreeHost", (void* p), (p))
GPUSLACK_RUNTIME_CALL(memcpy_async, "cudaMemcpyAsync",
                      (void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream),
                      (dst, src, bytes, kind, stream))
GPUSLACK_RUNTIME_CALL(memcpy_2d_async, "cudaMemcpy2DAsync",
                      (void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                       cudaMemcpyKind kind, cudaStream_t stream),
                      (dst, dpitch, src, spitch, width, height, kind, stream))
GPUSLACK_RUNTIME_CALL(launch_host_func, "cudaLaunchHostFunc", (cudaStream_t stream, cudaHostFn_t fn, void* user_data),
                      (stream, fn, user_data))
GPUSLACK_RUNTIME_CALL(stream_create_with_flags, "cudaStreamCreateWithFlags", (cudaStream_t * stream, unsigned int flags),
                      (stream, flags))
GPUSLACK_RUNTIME_CALL(stream_destroy, "cudaStreamDestroy", (cudaStream_t stream), (stream))
GPUSLACK_RUNTIME_CALL(stream_synchronize, "cudaStreamSynchronize", (cudaStream_t stream), (stream))
GPUSLACK_RUNTIME_CALL(stream_query, "cudaStreamQuery", (cudaStream_t stream), (stream))
GPUSLACK_RUNTIME_CALL(stream_get_flags, "cudaStreamGetFlags", (cudaStream_t stream, unsigned int* flags),
                      (stream, flags))
#undef GPUSLACK_RUNTIME_CALL

cudaError_t stream_get_capture_info(cudaStream_t stream, cudaStreamCaptureStatus* status, unsigned long long* id,
                                    cudaGraph_t* graph) {
  int major = runtime_major_version();
  if (major != 0 && major < 13) return stream_get_capture_info_cuda12(stream, status, id, graph, nullptr, nullptr);
  return stream_get_capture_info_full(stream, status, id, graph, nullptr, nullptr, nullptr);
}
cudaError_t user_object_create(cudaUserObject_t* object, void* ptr, cudaHostFn_t destroy) {
  return user_object_create_full(object, ptr, destroy, 1, cudaUserObjectNoDestructorSync);
}
cudaError_t user_object_release(cudaUserObject_t object) { return user_object_release_full(object, 1); }
cudaError_t graph_retain_user_object(cudaGraph_t graph, cudaUserObject_t object) {
  return graph_retain_user_object_full(graph, object, 1, cudaGraphUserObjectMove);
}

}  // namespace cuda
}  // namespace gpuslack
