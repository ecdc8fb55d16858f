// The simulated driver with GPUSIM_NO_DRIVER=1: cuInit fails with
// CUDA_ERROR_NOT_INITIALIZED and so does everything after it.
#include <cuda.h>
#include <gtest/gtest.h>

#include "driver_test_util.h"

using namespace drivertest;

namespace {

TEST(DriverNoDriver, EverythingFails) {
  EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cuInit(0));
  int n = -1;
  EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
  int v = -1;
  EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cuDriverGetVersion(&v));
  EXPECT_EQ(0, v);  // as cudaDriverGetVersion reports with no driver
  CUmemAllocationProp prop = device_prop();
  CUmemGenericAllocationHandle h;
  EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cuMemCreate(&h, kGran, &prop, 0));
  CUdeviceptr p;
  EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cuMemAddressReserve(&p, kGran, 0, 0, 0));
  size_t free_b, total;
  EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cuMemGetInfo(&free_b, &total));
  CUcontext ctx;
  EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cuCtxGetCurrent(&ctx));
}

TEST(DriverNoDriver, EntryPointsStillResolve) {
  // The library is loaded: its entry points resolve, and then fail.
  void* fn = nullptr;
  CU_OK(cuGetProcAddress("cuInit", &fn, CUDA_VERSION, 0, nullptr));
  EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, reinterpret_cast<CUresult (*)(unsigned)>(fn)(0));
}

}  // namespace
