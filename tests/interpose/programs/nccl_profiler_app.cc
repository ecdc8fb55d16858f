// NCCL's profiler plugin end to end (nccl_profiler_test.py): `ranks` ranks
// as threads of one process, one simulated device each
// (GPUSIM_DEVICE_COUNT >= ranks), each making one communicator
// (ncclCommInitRank) and `iterations` rounds of a 64 KiB and a 4 MiB
// all-reduce and a 1 MiB all-gather, then destroying it. Prints
// "nccl_profiler_app: ok" when every call succeeded.
// Usage: nccl_profiler_app [ranks=2] [iterations=10]
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

std::atomic<int> g_failures{0};

void check(bool ok, const char* what, int rank) {
  if (ok) return;
  std::fprintf(stderr, "nccl_profiler_app: rank %d: %s failed\n", rank, what);
  g_failures.fetch_add(1);
}

void rank_main(int rank, int ranks, int iterations, ncclUniqueId id) {
  check(cudaSetDevice(rank) == cudaSuccess, "cudaSetDevice", rank);
  ncclComm_t comm = nullptr;
  check(ncclCommInitRank(&comm, ranks, id, rank) == ncclSuccess, "ncclCommInitRank", rank);
  if (!comm) return;
  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream) == cudaSuccess, "cudaStreamCreate", rank);
  const size_t small = 16 << 10, large = 1 << 20, gather = 256 << 10;  // floats
  float *a = nullptr, *b = nullptr, *g = nullptr;
  check(cudaMalloc(&a, small * sizeof(float)) == cudaSuccess, "cudaMalloc", rank);
  check(cudaMalloc(&b, large * sizeof(float)) == cudaSuccess, "cudaMalloc", rank);
  check(cudaMalloc(&g, gather * ranks * sizeof(float)) == cudaSuccess, "cudaMalloc", rank);
  for (int i = 0; i < iterations; ++i) {
    check(ncclAllReduce(a, a, small, ncclFloat32, ncclSum, comm, stream) == ncclSuccess, "ncclAllReduce", rank);
    check(ncclAllReduce(b, b, large, ncclFloat32, ncclSum, comm, stream) == ncclSuccess, "ncclAllReduce", rank);
    check(ncclAllGather(g, g, gather, ncclFloat32, comm, stream) == ncclSuccess, "ncclAllGather", rank);
  }
  check(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize", rank);
  check(ncclCommDestroy(comm) == ncclSuccess, "ncclCommDestroy", rank);
  cudaFree(a);
  cudaFree(b);
  cudaFree(g);
  cudaStreamDestroy(stream);
}

}  // namespace

int main(int argc, char** argv) {
  const int ranks = argc > 1 ? std::atoi(argv[1]) : 2;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 10;
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 1;
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back(rank_main, r, ranks, iterations, id);
  for (std::thread& t : threads) t.join();
  if (g_failures.load() != 0) return 1;
  std::printf("nccl_profiler_app: ok\n");
  return 0;
}
