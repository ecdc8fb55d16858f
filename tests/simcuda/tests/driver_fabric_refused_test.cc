// Fabric handles offered but refused (GPUSIM_FABRIC_HANDLES=1
// GPUSIM_VMM_REFUSE=fabric, CMakeLists.txt): the device's attribute says it
// offers them, as a real driver's does whether or not the process has an
// IMEX channel, and cuMemCreate asking for them answers
// CUDA_ERROR_NOT_PERMITTED, as without one; without them it creates.
#include <cuda.h>
#include <gtest/gtest.h>

#include "driver_test_util.h"

using namespace drivertest;

namespace {

TEST(DriverFabricRefused, TheAttributeSaysOfferedAndCreationIsNotPermitted) {
  CU_OK(cuInit(0));
  CUdevice d;
  CU_OK(cuDeviceGet(&d, 0));
  int v = 0;
  CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, d));
  EXPECT_EQ(1, v);
  CUmemAllocationProp p = device_prop(0, /*posix_fd=*/true);
  p.requestedHandleTypes =
      static_cast<CUmemAllocationHandleType>(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC);
  CUmemGenericAllocationHandle h;
  EXPECT_EQ(CUDA_ERROR_NOT_PERMITTED, cuMemCreate(&h, kGran, &p, 0));
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CU_OK(cuMemCreate(&h, kGran, &p, 0));
  CU_OK(cuMemRelease(h));
}

}  // namespace
