// The simulated driver's capacity accounting, with GPUSIM_DEVICE_MEMORY=64M:
// physical handles count against their device's capacity (shared with the
// runtime's allocations), and cuMemGetInfo agrees.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

#include "driver_test_util.h"
#include "gpusim.h"

using namespace drivertest;

namespace {

constexpr size_t kCapacity = 64 * kMiB;

class DriverCapacity : public ::testing::Test {
 protected:
  // cuMemGetInfo answers for the current context: bound here, as a driver
  // API program binds one.
  void SetUp() override {
    ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
    bind_primary_context();
  }
};

TEST_F(DriverCapacity, CreatePastCapacityFails) {
  size_t free_b = 0, total = 0;
  CU_OK(cuMemGetInfo(&free_b, &total));
  EXPECT_EQ(kCapacity, total);
  EXPECT_EQ(kCapacity, free_b);
  CUmemAllocationProp prop = device_prop();
  std::vector<CUmemGenericAllocationHandle> hs;
  for (size_t used = 0; used < kCapacity; used += 8 * kMiB) {
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, 8 * kMiB, &prop, 0));
    hs.push_back(h);
    CU_OK(cuMemGetInfo(&free_b, &total));
    EXPECT_EQ(kCapacity - used - 8 * kMiB, free_b);
  }
  CUmemGenericAllocationHandle h;
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&h, kGran, &prop, 0));
  CU_OK(cuMemGetInfo(&free_b, &total));
  EXPECT_EQ(0u, free_b);
  EXPECT_EQ(kCapacity, total);
  // The runtime shares the capacity.
  void* d = nullptr;
  EXPECT_NE(cudaSuccess, cudaMalloc(&d, 4096));
  CU_OK(cuMemRelease(hs.back()));
  hs.pop_back();
  CU_OK(cuMemGetInfo(&free_b, &total));
  EXPECT_EQ(8 * kMiB, free_b);
  CU_OK(cuMemCreate(&h, 8 * kMiB, &prop, 0));
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&h, kGran, &prop, 0));
  CU_OK(cuMemRelease(h));
  for (auto x : hs) CU_OK(cuMemRelease(x));
  CU_OK(cuMemGetInfo(&free_b, &total));
  EXPECT_EQ(kCapacity, free_b);
}

TEST_F(DriverCapacity, SingleHandleLargerThanCapacityFails) {
  CUmemAllocationProp prop = device_prop();
  CUmemGenericAllocationHandle h;
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&h, kCapacity + kGran, &prop, 0));
  CU_OK(cuMemCreate(&h, kCapacity, &prop, 0));
  CU_OK(cuMemRelease(h));
}

TEST_F(DriverCapacity, RuntimeAllocationsCountForTheDriver) {
  void* d = nullptr;
  ASSERT_EQ(cudaSuccess, cudaMalloc(&d, 60 * kMiB));
  CUmemAllocationProp prop = device_prop();
  CUmemGenericAllocationHandle h;
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&h, 8 * kMiB, &prop, 0));
  CU_OK(cuMemCreate(&h, 4 * kMiB, &prop, 0));
  CU_OK(cuMemRelease(h));
  ASSERT_EQ(cudaSuccess, cudaFree(d));
}

TEST_F(DriverCapacity, ReleasedButMappedStillCounts) {
  CUmemAllocationProp prop = device_prop();
  CUmemGenericAllocationHandle h;
  CU_OK(cuMemCreate(&h, kCapacity, &prop, 0));
  CUdeviceptr p = 0;
  CU_OK(cuMemAddressReserve(&p, kCapacity, 0, 0, 0));
  CU_OK(cuMemMap(p, kCapacity, 0, h, 0));
  CU_OK(cuMemRelease(h));
  CUmemGenericAllocationHandle h2;
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&h2, kGran, &prop, 0));
  CU_OK(cuMemUnmap(p, kCapacity));
  CU_OK(cuMemCreate(&h2, kGran, &prop, 0));
  CU_OK(cuMemRelease(h2));
  CU_OK(cuMemAddressFree(p, kCapacity));
}

}  // namespace
