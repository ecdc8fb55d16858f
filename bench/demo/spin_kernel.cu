// The demo's compute: a kernel that keeps the GPU busy for a given time.
// On a real GPU it spins on the global timer; on the simulated device no
// kernel runs, and a launch occupies its stream for the cost model's time
// (tests/simcuda/README.md: GPUSIM_COST_KERNEL_US).
#include "spin_kernel.h"

namespace {

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(unsigned long long ns) {
  const unsigned long long start = global_ns();
  while (global_ns() - start < ns) {
  }
}

}  // namespace

cudaError_t launch_spin(cudaStream_t stream, unsigned long long ns) {
  spin_kernel<<<1, 32, 0, stream>>>(ns);
  return cudaGetLastError();
}
