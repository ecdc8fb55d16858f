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

cudaError_t pointer_get_attributes(cudaPointerAttributes* attributes, const void* ptr);
cudaError_t peek_at_last_error();
cudaError_t get_last_error();

// Device selection, events and capture state, for the collectives' GPU
// timing (ledger/collective_events.h). No synchronizing call is offered on
// purpose: gpuslack polls, it never waits for the GPU on the host's behalf.
cudaError_t get_device(int* device);
cudaError_t set_device(int device);
cudaError_t event_create(cudaEvent_t* event);  // default flags: timing on
cudaError_t event_record(cudaEvent_t event, cudaStream_t stream);
cudaError_t event_query(cudaEvent_t event);
cudaError_t event_elapsed_ms(float* ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t stream_is_capturing(cudaStream_t stream, cudaStreamCaptureStatus* status);

}  // namespace cuda
}  // namespace gpuslack
