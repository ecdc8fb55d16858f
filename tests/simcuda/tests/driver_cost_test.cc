// The simulated driver's cost model: with cuMemCreate costing 3 ms,
// cuMemMap 1.5 ms, cuMemUnmap 1 ms per mapping, cuMemSetAccess 2 ms and
// cuMemRelease 1 ms, each call takes at least its modeled host time. Lower
// bounds only, with wide margins (a loaded machine makes calls slower, never
// faster).
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
// GPUSIM_COST_MEM_MAP_US=1500, GPUSIM_COST_MEM_UNMAP_US=1000,
// GPUSIM_COST_MEM_RELEASE_US=1000.

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
  EXPECT_GE(ms_since(t), 0.8);
  t = Clock::now();
  CU_OK(cuMemRelease(h));
  EXPECT_GE(ms_since(t), 0.8);
  CU_OK(cuMemAddressFree(p, kGran));
}

// One cuMemUnmap over two mappings costs what two do: the cost grows with
// the handles unmapped (README.md, "Cost model").
TEST(DriverCost, UnmapCostsPerMappingItRemoves) {
  CU_OK(cuInit(0));
  CUmemAllocationProp prop = device_prop();
  CUmemGenericAllocationHandle a, b;
  CU_OK(cuMemCreate(&a, kGran, &prop, 0));
  CU_OK(cuMemCreate(&b, kGran, &prop, 0));
  CUdeviceptr p = 0;
  CU_OK(cuMemAddressReserve(&p, 2 * kGran, 0, 0, 0));
  CU_OK(cuMemMap(p, kGran, 0, a, 0));
  CU_OK(cuMemMap(p + kGran, kGran, 0, b, 0));
  auto t = Clock::now();
  CU_OK(cuMemUnmap(p, 2 * kGran));
  EXPECT_GE(ms_since(t), 1.8);
  CU_OK(cuMemRelease(a));
  CU_OK(cuMemRelease(b));
  CU_OK(cuMemAddressFree(p, 2 * kGran));
}

}  // namespace
