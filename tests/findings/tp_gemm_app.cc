// The field report's tensor-parallel shape, on the simulated device
// (tests/findings/findings_test.py, underfilled_kernels): a transformer
// layer's four GEMMs, as Megatron-style tensor parallelism splits them
// across `tp` GPUs, run here for one of those GPUs through cuBLAS
// (cublasGemmEx, bf16; the simulated cuBLAS's tiles: Note [GEMM tiles] in
// tests/simcuda/cublas_internal.h):
//   QKV projection (column-parallel): tokens x 3h/tp, k = h
//   attention output (row-parallel):  tokens x h,    k = h/tp
//   MLP up (column-parallel):         tokens x 4h/tp, k = h
//   MLP down (row-parallel):          tokens x h,    k = 4h/tp
// as cuBLAS sees a linear layer in PyTorch (column-major: m = the output
// features, n = the tokens). Usage: tp_gemm_app TP [HIDDEN TOKENS LAYERS STEPS].
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace {

bool gemm(cublasHandle_t h, int m, int n, int k) {
  const float one = 1, zero = 0;
  return cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, nullptr, CUDA_R_16BF, k, nullptr, CUDA_R_16BF, k,
                      &zero, nullptr, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) ==
         CUBLAS_STATUS_SUCCESS;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: tp_gemm_app TP [HIDDEN TOKENS LAYERS STEPS]\n");
    return 2;
  }
  const int tp = std::atoi(argv[1]);
  const int hidden = argc > 2 ? std::atoi(argv[2]) : 8192;
  const int tokens = argc > 3 ? std::atoi(argv[3]) : 2048;
  const int layers = argc > 4 ? std::atoi(argv[4]) : 2;
  const int steps = argc > 5 ? std::atoi(argv[5]) : 40;
  if (tp <= 0 || hidden % tp != 0 || tokens <= 0 || layers <= 0 || steps <= 0) {
    std::fprintf(stderr, "tp_gemm_app: bad arguments\n");
    return 2;
  }
  cudaStream_t s;
  cublasHandle_t h;
  if (cudaStreamCreate(&s) != cudaSuccess || cublasCreate(&h) != CUBLAS_STATUS_SUCCESS ||
      cublasSetStream(h, s) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "tp_gemm_app: no device\n");
    return 1;
  }
  for (int step = 0; step < steps; ++step) {
    for (int layer = 0; layer < layers; ++layer) {
      if (!gemm(h, 3 * hidden / tp, tokens, hidden) || !gemm(h, hidden, tokens, hidden / tp) ||
          !gemm(h, 4 * hidden / tp, tokens, hidden) || !gemm(h, hidden, tokens, 4 * hidden / tp)) {
        std::fprintf(stderr, "tp_gemm_app: a GEMM failed\n");
        return 1;
      }
    }
    if (cudaStreamSynchronize(s) != cudaSuccess) return 1;
  }
  cublasDestroy(h);
  cudaStreamDestroy(s);
  return 0;
}
