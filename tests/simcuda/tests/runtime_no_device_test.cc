// GPUSIM_DEVICE_COUNT=0 (set by CMake): a driver, but no device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

TEST(NoDevice, CallsFailWithNoDevice) {
  int n = -1;
  EXPECT_EQ(cudaErrorNoDevice, cudaGetDeviceCount(&n));
  EXPECT_EQ(0, n);
  cudaStream_t s;
  EXPECT_EQ(cudaErrorNoDevice, cudaStreamCreate(&s));
}
