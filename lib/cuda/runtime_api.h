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
cudaError_t get_device(int* device);
cudaError_t device_synchronize();
cudaError_t event_create(cudaEvent_t* event, unsigned int flags);
cudaError_t event_record(cudaEvent_t event, cudaStream_t stream);
cudaError_t event_query(cudaEvent_t event);
cudaError_t event_synchronize(cudaEvent_t event);
cudaError_t event_destroy(cudaEvent_t event);

}  // namespace cuda
}  // namespace gpuslack
