// Fault injection: GPUSIM_FAIL=cudaMalloc:2,cudaHostAlloc:1 (set by CMake).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

TEST(Faults, NthCallFailsOnce) {
  void* p = nullptr;
  EXPECT_EQ(cudaSuccess, cudaMalloc(&p, 4096));
  cudaFree(p);
  EXPECT_EQ(cudaErrorMemoryAllocation, cudaMalloc(&p, 4096));  // the 2nd
  EXPECT_EQ(nullptr, p);
  EXPECT_EQ(cudaSuccess, cudaMalloc(&p, 4096));
  cudaFree(p);
  EXPECT_EQ(cudaErrorMemoryAllocation, cudaHostAlloc(&p, 4096, 0));  // the 1st
  EXPECT_EQ(cudaSuccess, cudaMallocHost(&p, 4096));  // counts as cudaHostAlloc
  cudaFreeHost(p);
}
