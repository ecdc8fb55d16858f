// The simulated driver with GPUSIM_DEVICE_COUNT=0: cuInit reports
// CUDA_ERROR_NO_DEVICE, and the driver stays uninitialized.
#include <cuda.h>
#include <gtest/gtest.h>

#include "driver_test_util.h"

using namespace drivertest;

namespace {

TEST(DriverNoDevice, CuInitFails) {
  int v = 0;
  CU_OK(cuDriverGetVersion(&v));  // the driver itself is fine
  EXPECT_EQ(CUDA_VERSION, v);
  EXPECT_EQ(CUDA_ERROR_NO_DEVICE, cuInit(0));
  int n = -1;
  EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
  CUdevice d;
  EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGet(&d, 0));
}

}  // namespace
