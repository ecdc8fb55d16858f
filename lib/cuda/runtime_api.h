// The CUDA runtime functions gpuslack's core calls for itself (not hooks):
// found at run time like the hooks' targets (runtime_symbols.h), never
// linked. When the runtime cannot be found they answer
// cudaErrorSharedObjectInitFailed.
//
// Thread safety: any thread.
#pragma once

#include <cuda_runtime_api.h>

namespace gpuslack {
namespace cuda {

// Errors and pointers (cuda/pointer_kind.h); cudaDriverGetVersion records
// gpuslack's own errors (cuda/fail.h).
cudaError_t pointer_get_attributes(cudaPointerAttributes* attributes, const void* ptr);
cudaError_t peek_at_last_error();
cudaError_t get_last_error();
cudaError_t driver_get_version(int* version);

// Devices, events and capture state: the event pool (sync/event_pool.h),
// the collectives' GPU timing and the allocator's free epochs. gpuslack
// polls events; the two waiting calls serve only the stalls docs/allocator.md
// documents (free_sync, and an allocation that must wait for pending frees).
cudaError_t get_device(int* device);
cudaError_t set_device(int device);
cudaError_t device_synchronize();
// The topology (topology/topology.h): whether `device` can map `peer`'s memory.
cudaError_t device_can_access_peer(int* can, int device, int peer);
cudaError_t event_create(cudaEvent_t* event, unsigned int flags);
cudaError_t event_record(cudaEvent_t event, cudaStream_t stream);
cudaError_t event_query(cudaEvent_t event);
cudaError_t event_synchronize(cudaEvent_t event);
cudaError_t event_elapsed_ms(float* ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t event_destroy(cudaEvent_t event);
cudaError_t stream_is_capturing(cudaStream_t stream, cudaStreamCaptureStatus* status);
// Captures gpuslack did not see begin (the C API, with no hooks: Note [Capture
// without hooks] in alloc/device_allocator.h): the capture's id and graph, a
// user object the graph keeps until it and every instance of it are
// destroyed, and the thread's capture mode (relaxed while it maps memory).
// stream_get_capture_info calls the entry point of the loaded runtime's
// major version (runtime_symbols.h): cudaStreamGetCaptureInfo in CUDA 13,
// cudaStreamGetCaptureInfo_v2 in CUDA 12, whose plain name takes three
// arguments and would leave `graph` unwritten.
cudaError_t stream_get_capture_info(cudaStream_t stream, cudaStreamCaptureStatus* status, unsigned long long* id,
                                    cudaGraph_t* graph);
cudaError_t user_object_create(cudaUserObject_t* object, void* ptr, cudaHostFn_t destroy);
cudaError_t user_object_release(cudaUserObject_t object);
cudaError_t graph_retain_user_object(cudaGraph_t graph, cudaUserObject_t object);
cudaError_t thread_exchange_stream_capture_mode(cudaStreamCaptureMode* mode);

// Pinned host memory: the chunks of the pinned heap (pin/pinned_chunks.h).
// These are the runtime's own calls, never gpuslack's hooks of them.
cudaError_t host_alloc(void** p, size_t size, unsigned int flags);
cudaError_t free_host(void* p);

// Staged copies (stage/staged_copy.h): the copies in and out of staging
// memory (which comes from host_alloc above), and the stream queries the
// copies need. A `stream` here is a real handle: the per-thread default
// stream is cudaStreamPerThread, never 0.
cudaError_t memcpy_async(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t memcpy_2d_async(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                            cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t launch_host_func(cudaStream_t stream, cudaHostFn_t fn, void* user_data);
cudaError_t stream_create_with_flags(cudaStream_t* stream, unsigned int flags);
cudaError_t stream_destroy(cudaStream_t stream);
cudaError_t stream_synchronize(cudaStream_t stream);
cudaError_t stream_query(cudaStream_t stream);
cudaError_t stream_get_flags(cudaStream_t stream, unsigned int* flags);

}  // namespace cuda
}  // namespace gpuslack
