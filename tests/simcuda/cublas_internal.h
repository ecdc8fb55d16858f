// The simulated cuBLAS / cuBLASLt (libcublas.so.13, libcublasLt.so.13):
// handles that keep their stream, workspace and modes; gemm-like calls that
// occupy the handle's stream for a time by their flops (Config::gemm_tflops)
// and never compute. README.md, "cuBLAS". Test-only.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include "sim.h"

namespace cublassim {

// Enqueues a math kernel of `flops` on `stream` (resolved as the runtime
// does); CUBLAS_STATUS_INVALID_VALUE for a stream that is not live.
inline cublasStatus_t run(cudaStream_t stream, double flops) {
  CUstream_st* s = gpusim::resolve(stream, false);
  if (!s) return CUBLAS_STATUS_INVALID_VALUE;
  gpusim::launch_flops(s, flops);
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace cublassim
