// Fault injection in the simulated driver, with
// GPUSIM_FAIL=cuMemCreate:2,cuMemMap:1,cuMemSetAccess:1: exactly those calls
// fail with CUDA_ERROR_OUT_OF_MEMORY and leave no state behind. Each test
// case runs as its own process, so each starts its counters afresh (but all
// three faults are armed in each).
#include <cuda.h>
#include <gtest/gtest.h>

#include "driver_test_util.h"
#include "gpusim.h"

using namespace drivertest;

namespace {

class DriverFault : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(CUDA_SUCCESS, cuInit(0)); }
};

TEST_F(DriverFault, SecondCreateFails) {
  CUmemAllocationProp prop = device_prop();
  CUmemGenericAllocationHandle a, b, c;
  CU_OK(cuMemCreate(&a, kGran, &prop, 0));
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&b, kGran, &prop, 0));
  EXPECT_EQ(kGran, gpusim_device_used(0));  // the failed call charged nothing
  CU_OK(cuMemCreate(&c, kGran, &prop, 0));
  EXPECT_EQ(2 * kGran, gpusim_device_used(0));
  CU_OK(cuMemRelease(a));
  CU_OK(cuMemRelease(c));
}

TEST_F(DriverFault, FirstMapFails) {
  CUmemAllocationProp prop = device_prop();
  CUmemGenericAllocationHandle h;
  CU_OK(cuMemCreate(&h, kGran, &prop, 0));
  CUdeviceptr p = 0;
  CU_OK(cuMemAddressReserve(&p, kGran, 0, 0, 0));
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemMap(p, kGran, 0, h, 0));
  EXPECT_EQ("---p", perms_at(p));  // nothing mapped
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(p, kGran));
  CU_OK(cuMemMap(p, kGran, 0, h, 0));
  CU_OK(cuMemUnmap(p, kGran));
  CU_OK(cuMemRelease(h));
  CU_OK(cuMemAddressFree(p, kGran));
}

TEST_F(DriverFault, FirstSetAccessFails) {
  CUmemAllocationProp prop = device_prop();
  CUmemGenericAllocationHandle h;
  CU_OK(cuMemCreate(&h, kGran, &prop, 0));
  CUdeviceptr p = 0;
  CU_OK(cuMemAddressReserve(&p, kGran, 0, 0, 0));
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemMap(p, kGran, 0, h, 0));  // cuMemMap:1
  CU_OK(cuMemMap(p, kGran, 0, h, 0));
  CUmemAccessDesc a = rw_access();
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemSetAccess(p, kGran, &a, 1));
  EXPECT_EQ("---s", perms_at(p));  // no access granted
  CU_OK(cuMemSetAccess(p, kGran, &a, 1));
  EXPECT_EQ("rw-s", perms_at(p));
  CU_OK(cuMemUnmap(p, kGran));
  CU_OK(cuMemRelease(h));
  CU_OK(cuMemAddressFree(p, kGran));
}

}  // namespace
