// The conformance suite (tests/conformance/README.md): what the simulated
// device claims and what gpuslack assumes about CUDA, checked against
// whatever libcudart.so.13 / libcuda.so.1 / libnccl.so.2 the process loads
// -- the simulated ones in CI (LD_LIBRARY_PATH=<build>/simcuda), a real GPU
// through scripts/gpu-check.sh. Each test names the section of NVIDIA's
// documentation it models.
//
// Timing: GPU work that keeps a stream busy for kBusyMs; "returns at once"
// means under kAtOnceMs, "waited" means at least kWaitedMs: margins of 100
// and 50 ms, wide enough for a loaded 2-core VM and for a real GPU.
//
// Thread safety: the helpers may be called from any test thread.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>

#define CUDA_OK(x) ASSERT_EQ(cudaSuccess, (x))
#define CU_OK(x) ASSERT_EQ(CUDA_SUCCESS, (x))

namespace conformance {

using Clock = std::chrono::steady_clock;

inline constexpr unsigned kBusyMs = 200;
inline constexpr double kAtOnceMs = 100;
inline constexpr double kWaitedMs = 150;

double ms_since(Clock::time_point t);

// Enqueues GPU work that keeps `stream` busy for `ms`: the simulated
// device's busy kernel (gpusim_busy_kernel, looked up in the process), or
// on a real GPU the demo's spin kernel (bench/demo/spin_kernel.cu; built
// only where nvcc is, which scripts/gpu-check.sh's build is).
cudaError_t busy(cudaStream_t stream, unsigned ms);

// True when the loaded runtime is the simulated device's.
bool simulated();

}  // namespace conformance
