// Errors gpuslack returns itself (a free it refuses, a range past the end
// of a VMM block, an IPC handle it cannot give), made to look exactly like
// the runtime's own: the same code, and the same last-error state, so that
// cudaGetLastError()/cudaPeekAtLastError() then return what they would
// have returned with the runtime alone.
//
// The runtime's per-thread last error cannot be written directly: fail()
// makes one real runtime call that the documentation says fails with
// exactly that code, and the runtime records it.
//
// Note [The call that records an error]: for cudaErrorInvalidValue,
// cudaDriverGetVersion(NULL): "This function automatically returns
// cudaErrorInvalidValue if driverVersion is NULL" (CUDA Runtime API,
// Version Management). It needs no device, context or stream, changes no
// state, and cannot fail otherwise once the runtime is initialized (every
// path that calls fail() has used the runtime already). An error already
// pending is replaced, as the runtime's own failing call would replace it.
// Other codes have no such call yet: fail() returns them unrecorded (none
// of gpuslack's own errors is another code today; add a case before
// returning one).
//
// Thread safety: any thread (the last error is per thread).
#pragma once

#include <cuda_runtime_api.h>

namespace gpuslack {
namespace cuda {

// Records `e` as the calling thread's last runtime error (Note [The call
// that records an error]) and returns it.
cudaError_t fail(cudaError_t e);

}  // namespace cuda
}  // namespace gpuslack
