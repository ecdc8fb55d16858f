// The simulated driver's cost model: with cuMemCreate costing 3 ms,
// cuMemMap / cuMemUnmap 1.5 ms and cuMemSetAccess 2 ms, each call takes at
// least its modeled host time. Lower bounds only, with wide margins (a
// loaded machine makes calls slower, never faster).
#include <cuda.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>

#include "driver_test_util.h"

using namespace drivertest;
using Clock = std::chrono::steady_clock;

namespace {

// The costs are raised by the test's environment (CMakeLists.txt):
// GPUSIM_COST_SET_ACCESS_US=2000, GPUSIM_COST_MEM_CREATE_US=3000,
// GPUSIM_COST_MEM_MAP_US=1500.

TEST(DriverCost, VmmCallsTakeTheirModeledTime) {
  CU_OK(cuInit(0));
  CUmemAllocationProp prop = device_prop();
  CUmemGenericAllocationHandle h;
  auto t = Clock::now();
  CU_OK(cuMemCreate(&h, kGran, &prop, 0));
  EXPECT_GE(ms_since(t), 2.5);
  CUdeviceptr p = 0;
  CU_OK(cuMemAddressReserve(&p, kGran, 0, 0, 0));
  t = Clock::now();
  CU_OK(cuMemMap(p, kGran, 0, h, 0));
  EXPECT_GE(ms_since(t), 1.0);
  CUmemAccessDesc a = rw_access();
  t = Clock::now();
  CU_OK(cuMemSetAccess(p, kGran, &a, 1));
  EXPECT_GE(ms_since(t), 1.5);
  t = Clock::now();
  CU_OK(cuMemUnmap(p, kGran));
  EXPECT_GE(ms_since(t), 1.0);
  CU_OK(cuMemRelease(h));
  CU_OK(cuMemAddressFree(p, kGran));
}

}  // namespace
