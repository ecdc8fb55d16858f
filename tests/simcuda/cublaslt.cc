// libcublasLt.so.13 of the simulated device: descriptors keep what torch
// sets on them; the heuristic offers one algorithm needing no workspace;
// cublasLtMatmul occupies the stream for 2*m*n*k*batch flops (m x n is D's
// layout, k the inner dimension of op(A)). Nothing is computed: D keeps what
// it held. The handle is whatever the caller passes (torch passes its cuBLAS
// handle, as the real libraries allow).
#include <cstring>
#include <map>
#include <new>
#include <vector>

#include "cublas_internal.h"

using namespace gpusim;

namespace {

struct Attrs {
  std::map<int, std::vector<char>> values;
  void set(int attr, const void* buf, size_t size) {
    auto& v = values[attr];
    v.assign(static_cast<const char*>(buf), static_cast<const char*>(buf) + size);
  }
  template <class T>
  T get(int attr, T fallback) const {
    auto it = values.find(attr);
    T out = fallback;
    if (it != values.end() && it->second.size() == sizeof(T)) std::memcpy(&out, it->second.data(), sizeof(T));
    return out;
  }
};
struct Desc : Attrs {};
struct Layout : Attrs {
  uint64_t rows = 0, cols = 0;
};
struct Pref : Attrs {};

template <class T, class Opaque>
T* of(Opaque* p) { return reinterpret_cast<T*>(p); }

}  // namespace

size_t CUBLASWINAPI cublasLtGetVersion(void) { return CUBLAS_VERSION; }

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t, cudaDataType_t) {
  if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
  *desc = reinterpret_cast<cublasLtMatmulDesc_t>(new (std::nothrow) Desc());
  return *desc ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}
cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete of<Desc>(desc);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                                           const void* buf, size_t size) {
  if (!desc || !buf) return CUBLAS_STATUS_INVALID_VALUE;
  of<Desc>(desc)->set(attr, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType, uint64_t rows,
                                                       uint64_t cols, int64_t) {
  if (!layout) return CUBLAS_STATUS_INVALID_VALUE;
  Layout* l = new (std::nothrow) Layout();
  if (!l) return CUBLAS_STATUS_ALLOC_FAILED;
  l->rows = rows, l->cols = cols;
  *layout = reinterpret_cast<cublasLtMatrixLayout_t>(l);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete of<Layout>(layout);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                             cublasLtMatrixLayoutAttribute_t attr, const void* buf,
                                                             size_t size) {
  if (!layout || !buf) return CUBLAS_STATUS_INVALID_VALUE;
  of<Layout>(layout)->set(attr, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  *pref = reinterpret_cast<cublasLtMatmulPreference_t>(new (std::nothrow) Pref());
  return *pref ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}
cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete of<Pref>(pref);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                                 cublasLtMatmulPreferenceAttributes_t attr,
                                                                 const void* buf, size_t size) {
  if (!pref || !buf) return CUBLAS_STATUS_INVALID_VALUE;
  of<Pref>(pref)->set(attr, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}

// One algorithm (id 0), valid for every problem, needing no workspace.
cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoInit(cublasLtHandle_t, cublasComputeType_t, cudaDataType_t, cudaDataType_t,
                                                   cudaDataType_t, cudaDataType_t, cudaDataType_t, int algoId,
                                                   cublasLtMatmulAlgo_t* algo) {
  if (!algo) return CUBLAS_STATUS_INVALID_VALUE;
  std::memset(algo, 0, sizeof(*algo));
  algo->data[0] = static_cast<uint64_t>(algoId);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoCheck(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                                    cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                                    cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t* algo,
                                                    cublasLtMatmulHeuristicResult_t* result) {
  if (!algo || !result) return CUBLAS_STATUS_INVALID_VALUE;
  cublasLtMatmulAlgo_t a = *algo;  // `algo` may point into `result`
  std::memset(result, 0, sizeof(*result));
  result->algo = a;
  result->state = CUBLAS_STATUS_SUCCESS;
  result->wavesCount = 1.0f;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                           cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                                           cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                                           cublasLtMatmulPreference_t, int requested,
                                                           cublasLtMatmulHeuristicResult_t results[], int* returned) {
  if (!handle || !desc || requested <= 0 || !results || !returned) return CUBLAS_STATUS_INVALID_VALUE;
  std::memset(results, 0, sizeof(results[0]) * static_cast<size_t>(requested));
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoConfigSetAttribute(cublasLtMatmulAlgo_t* algo,
                                                                 cublasLtMatmulAlgoConfigAttributes_t, const void* buf,
                                                                 size_t) {
  return algo && buf ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
// Every configuration attribute of the one algorithm reads 0 (its id too).
cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                                 cublasLtMatmulAlgoConfigAttributes_t, void* buf,
                                                                 size_t size, size_t* written) {
  if (!algo || (!buf && size) || (!size && !written)) return CUBLAS_STATUS_INVALID_VALUE;
  if (size) std::memset(buf, 0, size);
  if (written) *written = size ? size : sizeof(uint64_t);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void*, const void*,
                                           cublasLtMatrixLayout_t a, const void*, cublasLtMatrixLayout_t, const void*,
                                           const void*, cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t d,
                                           const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t stream) {
  if (!handle || !desc || !a || !d) return CUBLAS_STATUS_INVALID_VALUE;
  const Layout* A = of<Layout>(a);
  const Layout* D = of<Layout>(d);
  int32_t transa = of<Desc>(desc)->get<int32_t>(CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_N);
  const int64_t k = static_cast<int64_t>(transa == CUBLAS_OP_N ? A->cols : A->rows);
  const int64_t batch = D->get<int32_t>(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 1);
  // A grid of output tiles (Note [GEMM tiles], cublas_internal.h).
  return cublassim::run_gemm(stream, static_cast<int64_t>(D->rows), static_cast<int64_t>(D->cols), k, batch);
}
