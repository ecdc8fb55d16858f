// libcublas.so.13 of the simulated device: the calls PyTorch makes for
// matmul, linear layers, attention and dot products. A handle keeps its
// stream, workspace, pointer and math modes; gemm, gemv and dot occupy the
// handle's stream for their flops (Config::gemm_tflops) and compute nothing:
// outputs keep what they held, except a dot's result in host memory
// (CUBLAS_POINTER_MODE_HOST), which reads 0 once the stream reached it, as
// the real call returns only then. Every other name torch binds fails with
// CUBLAS_STATUS_NOT_SUPPORTED (cublas_unsupported.cc).
#include <new>

#include "cublas_internal.h"

using namespace gpusim;

struct cublasContext {
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
  int sm_count_target = 0;
};

namespace {

double gemm_flops(int m, int n, int k, double batch = 1) {
  if (m < 0 || n < 0 || k < 0 || batch < 0) return -1;
  return 2.0 * m * n * k * batch;
}

cublasStatus_t gemm(cublasHandle_t h, double flops) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (flops < 0) return CUBLAS_STATUS_INVALID_VALUE;
  return cublassim::run(h->stream, flops);
}

// A GEMM proper: a grid of output tiles (Note [GEMM tiles], cublas_internal.h).
cublasStatus_t tiled(cublasHandle_t h, int m, int n, int k, int batch = 1) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  return cublassim::run_gemm(h->stream, m, n, k, batch);
}

// A dot product of n elements: on the stream; a host result waits for it.
template <class T>
cublasStatus_t dot(cublasHandle_t h, int n, T* result) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!result) return CUBLAS_STATUS_INVALID_VALUE;
  if (cublasStatus_t st = cublassim::run(h->stream, 2.0 * (n > 0 ? n : 0))) return st;
  if (h->pointer_mode == CUBLAS_POINTER_MODE_HOST) {
    sync_stream(resolve(h->stream, false));
    *result = T{};
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new (std::nothrow) cublasContext();
  return *handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}
cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bytes && !workspace) return CUBLAS_STATUS_INVALID_VALUE;
  handle->workspace = workspace, handle->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math_mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->math_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasSetSmCountTarget(cublasHandle_t handle, int target) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (target < 0) return CUBLAS_STATUS_INVALID_VALUE;
  handle->sm_count_target = target;
  return CUBLAS_STATUS_SUCCESS;
}

// gemm: C = alpha op(A) op(B) + beta C, m x n x k.
#define GPUSIM_GEMM(name, T)                                                                                      \
  cublasStatus_t CUBLASWINAPI name(cublasHandle_t h, cublasOperation_t, cublasOperation_t, int m, int n, int k,   \
                                   const T*, const T*, int, const T*, int, const T*, T*, int) {                    \
    return tiled(h, m, n, k);                                                                                     \
  }
GPUSIM_GEMM(cublasSgemm_v2, float)
GPUSIM_GEMM(cublasDgemm_v2, double)
GPUSIM_GEMM(cublasCgemm_v2, cuComplex)
GPUSIM_GEMM(cublasZgemm_v2, cuDoubleComplex)
#undef GPUSIM_GEMM

#define GPUSIM_GEMM_STRIDED(name, T)                                                                              \
  cublasStatus_t CUBLASWINAPI name(cublasHandle_t h, cublasOperation_t, cublasOperation_t, int m, int n, int k,   \
                                   const T*, const T*, int, long long, const T*, int, long long, const T*, T*,    \
                                   int, long long, int batch) {                                                   \
    return tiled(h, m, n, k, batch);                                                                              \
  }
GPUSIM_GEMM_STRIDED(cublasDgemmStridedBatched, double)
GPUSIM_GEMM_STRIDED(cublasCgemmStridedBatched, cuComplex)
GPUSIM_GEMM_STRIDED(cublasZgemmStridedBatched, cuDoubleComplex)
#undef GPUSIM_GEMM_STRIDED

#define GPUSIM_GEMM_BATCHED(name, T)                                                                              \
  cublasStatus_t CUBLASWINAPI name(cublasHandle_t h, cublasOperation_t, cublasOperation_t, int m, int n, int k,   \
                                   const T*, const T* const[], int, const T* const[], int, const T*, T* const[],  \
                                   int, int batch) {                                                              \
    return tiled(h, m, n, k, batch);                                                                              \
  }
GPUSIM_GEMM_BATCHED(cublasSgemmBatched, float)
GPUSIM_GEMM_BATCHED(cublasDgemmBatched, double)
GPUSIM_GEMM_BATCHED(cublasCgemmBatched, cuComplex)
GPUSIM_GEMM_BATCHED(cublasZgemmBatched, cuDoubleComplex)
#undef GPUSIM_GEMM_BATCHED

cublasStatus_t CUBLASWINAPI cublasSgemmEx(cublasHandle_t h, cublasOperation_t, cublasOperation_t, int m, int n, int k,
                                          const float*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                          const float*, void*, cudaDataType, int) {
  return tiled(h, m, n, k);
}
cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t h, cublasOperation_t, cublasOperation_t, int m, int n, int k,
                                         const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                         const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) {
  return tiled(h, m, n, k);
}
cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t, cublasOperation_t, int m,
                                                       int n, int k, const void*, const void*, cudaDataType, int,
                                                       long long, const void*, cudaDataType, int, long long,
                                                       const void*, void*, cudaDataType, int, long long, int batch,
                                                       cublasComputeType_t, cublasGemmAlgo_t) {
  return tiled(h, m, n, k, batch);
}

// gemv: y = alpha op(A) x + beta y, A m x n.
#define GPUSIM_GEMV(name, T)                                                                                      \
  cublasStatus_t CUBLASWINAPI name(cublasHandle_t h, cublasOperation_t, int m, int n, const T*, const T*, int,    \
                                   const T*, int, const T*, T*, int) {                                            \
    return gemm(h, gemm_flops(m, n, 1));                                                                          \
  }
GPUSIM_GEMV(cublasSgemv_v2, float)
GPUSIM_GEMV(cublasDgemv_v2, double)
GPUSIM_GEMV(cublasCgemv_v2, cuComplex)
GPUSIM_GEMV(cublasZgemv_v2, cuDoubleComplex)
#undef GPUSIM_GEMV

#define GPUSIM_DOT(name, T)                                                                                       \
  cublasStatus_t CUBLASWINAPI name(cublasHandle_t h, int n, const T*, int, const T*, int, T* result) {            \
    return dot(h, n, result);                                                                                     \
  }
GPUSIM_DOT(cublasSdot_v2, float)
GPUSIM_DOT(cublasDdot_v2, double)
GPUSIM_DOT(cublasCdotu_v2, cuComplex)
GPUSIM_DOT(cublasCdotc_v2, cuComplex)
GPUSIM_DOT(cublasZdotu_v2, cuDoubleComplex)
GPUSIM_DOT(cublasZdotc_v2, cuDoubleComplex)
#undef GPUSIM_DOT

// Unlike the typed dots, a host result is left as it was (torch uses
// device results).
cublasStatus_t CUBLASWINAPI cublasDotEx(cublasHandle_t h, int n, const void*, cudaDataType, int, const void*,
                                        cudaDataType, int, void* result, cudaDataType, cudaDataType) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!result) return CUBLAS_STATUS_INVALID_VALUE;
  return cublassim::run(h->stream, 2.0 * (n > 0 ? n : 0));
}
