// A library linked against libnccl (and libcudart), which an application
// dlopen()s with RTLD_LOCAL, as some inference engines load NCCL: its
// libnccl is then outside the global lookup scope.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdio>

extern "C" __attribute__((visibility("default"))) int run_nccl_all_reduce() {
  ncclComm_t comm;
  int dev = 0;
  if (ncclCommInitAll(&comm, 1, &dev) != ncclSuccess) return 1;
  float* buf = nullptr;
  if (cudaMalloc(&buf, 1024 * sizeof(float)) != cudaSuccess) return 2;
  for (int i = 0; i < 3; ++i)
    if (ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) return 3;
  if (cudaDeviceSynchronize() != cudaSuccess) return 4;
  cudaFree(buf);
  ncclCommDestroy(comm);
  std::printf("all-reduce ok\n");
  return 0;
}
