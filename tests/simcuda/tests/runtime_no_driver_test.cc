// GPUSIM_NO_DRIVER=1 (set by CMake): every call reports the missing driver.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

TEST(NoDriver, CallsFailWithInsufficientDriver) {
  int n = -1;
  EXPECT_EQ(cudaErrorInsufficientDriver, cudaGetDeviceCount(&n));
  EXPECT_EQ(0, n);
  void* p = nullptr;
  EXPECT_EQ(cudaErrorInsufficientDriver, cudaMalloc(&p, 16));
  int v = -1;
  EXPECT_EQ(cudaSuccess, cudaDriverGetVersion(&v));
  EXPECT_EQ(0, v);
}
