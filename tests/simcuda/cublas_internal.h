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
// The kernel is named like one of cuBLAS's own (its CUPTI records).
inline constexpr const char* kGemmKernel =
    "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
inline cublasStatus_t run(cudaStream_t stream, double flops, const char* kernel = kGemmKernel) {
  CUstream_st* s = gpusim::resolve(stream, false);
  if (!s) return CUBLAS_STATUS_INVALID_VALUE;
  gpusim::launch_flops(s, flops, kernel);
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace cublassim
