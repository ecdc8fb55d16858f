// Test-only API of the simulated CUDA device (exported by libgpusim.so).
//
// Tests use these to create GPU work without kernels and to observe the
// device; the product never calls them.
#pragma once

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Enqueues a "kernel" on `stream` (NULL: the legacy default stream) that
// runs for `duration_us` of GPU time while owning `buf`: it fills the buffer
// with `pattern` when it starts, re-reads it every ~50 us and once at the
// end, and if any word changed under it (someone else wrote memory it was
// still using) counts a violation. When it finishes, `*status` (host memory,
// may be NULL) is set to 1 if the buffer stayed intact, -1 if it changed.
// `buf` must be device memory of at least `bytes` (a multiple of 4).
cudaError_t gpusim_busy_kernel(cudaStream_t stream, void* buf, size_t bytes,
                               unsigned duration_us, uint32_t pattern,
                               volatile int* status);

// Busy kernels so far that saw their buffer change.
long gpusim_busy_kernel_violations(void);

// Device synchronizations cudaFree has performed so far (the simulated
// libcudart's count; 0 when cudaFree never reached it).
long gpusim_free_syncs(void);

// Calls of `name` so far in this process, successful or not, for the calls
// that give or take device memory: cudaMalloc, cudaFree, cuMemCreate,
// cuMemRelease, cuMemMap, cuMemUnmap, cuMemSetAccess, cuMemAddressReserve,
// cuMemAddressFree (whether made directly or through an entry point: the
// benchmarks count a peer allocator's driver calls with it); cudaFree(NULL)
// is not counted. And the runtime's host-side waits: cudaDeviceSynchronize,
// cudaStreamSynchronize (and its _ptsz form), cudaEventSynchronize (the
// benchmarks count an allocator's stalls with them); and cudaEventRecord
// (with its WithFlags and _ptsz forms: the fences an allocator records).
// -1 for any other name.
long gpusim_calls(const char* name);

// Bytes of the device's capacity in use (allocations and physical handles).
size_t gpusim_device_used(int device);

#ifdef __cplusplus
}
#endif
