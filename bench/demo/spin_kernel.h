// The demo's kernel (spin_kernel.cu): busy for `ns` nanoseconds on a real
// GPU, for the cost model's kernel time on the simulated device.
#pragma once

#include <cuda_runtime_api.h>

cudaError_t launch_spin(cudaStream_t stream, unsigned long long ns);
