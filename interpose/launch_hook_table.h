// The counted hooks: kernel launches, the second kind of row of the
// generator in hooks.cc (the first is hook_table.h's and
// nccl_hook_table.h's timed rows).
//
// Not to be included outside interpose/.
//
// A row: X(symbol, return type, (parameters), (arguments)), exactly as the
// CUDA 13 runtime exports and declares them (nm -D libcudart.so.13;
// cuda_runtime_api.h).
//
// Not hooked: __cudaLaunchKernel(_ptsz), which nvcc 13's <<<>>> stubs call.
// It is the runtime's internal entry point, in no public header, and
// libgpuslack.so exports only the public API it hooks (docs/design.md,
// principle 3; tests/interpose/check_seal.sh). Kernels launched that way
// are not counted here; the timeline counts them from CUPTI's records
// (DeviceTimeline::kernels).
//
// A counted hook does not time its call and is not in the ledger's per-call
// table (launches would dominate it): it finds the real function (one
// acquire load), starts the session on the process's first hooked call (cold),
// counts one launch on the calling thread (ledger::count_launch(): a
// thread-local increment, no clock read) and tail-calls the real function.
// The count is the timeline's (ledger::launches(), host_activity.h): a GPU
// gap between launches made back to back is launch-bound. Budget: 15 ns over
// calling the real function directly (bench/hook_overhead_bench.cc,
// BM_LaunchKernel_*).
#pragma once

#include <cuda_runtime_api.h>

// Declared by the headers only for per-thread default stream builds.
extern "C" {
cudaError_t cudaLaunchKernel_ptsz(const void*, dim3, dim3, void**, size_t, cudaStream_t);
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t*, const void*, void**);
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void*, dim3, dim3, void**, size_t, cudaStream_t);
}

#define GPUSLACK_P_LAUNCH \
  (const void* func, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream)
#define GPUSLACK_P_LAUNCH_EX (const cudaLaunchConfig_t* config, const void* func, void** args)

#define GPUSLACK_COUNTED_HOOKS(X)                                                                      \
  X(cudaLaunchKernel, cudaError_t, GPUSLACK_P_LAUNCH, (func, grid, block, args, shared, stream))      \
  X(cudaLaunchKernel_ptsz, cudaError_t, GPUSLACK_P_LAUNCH, (func, grid, block, args, shared, stream)) \
  X(cudaLaunchKernelExC, cudaError_t, GPUSLACK_P_LAUNCH_EX, (config, func, args))                      \
  X(cudaLaunchKernelExC_ptsz, cudaError_t, GPUSLACK_P_LAUNCH_EX, (config, func, args))                 \
  X(cudaLaunchCooperativeKernel, cudaError_t, GPUSLACK_P_LAUNCH,                                       \
    (func, grid, block, args, shared, stream))                                                         \
  X(cudaLaunchCooperativeKernel_ptsz, cudaError_t, GPUSLACK_P_LAUNCH,                                  \
    (func, grid, block, args, shared, stream))
