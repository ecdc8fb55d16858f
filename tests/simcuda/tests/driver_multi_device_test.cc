// The simulated driver with GPUSIM_DEVICE_COUNT=2: capacity is per device,
// and the current context and the runtime's current device are one state.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "driver_test_util.h"
#include "gpusim.h"

using namespace drivertest;

namespace {

class DriverMultiDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
    ASSERT_EQ(CUDA_SUCCESS, cuDeviceTotalMem(&capacity_, 0));
  }
  size_t capacity_ = 0;
};

TEST_F(DriverMultiDevice, CapacityIsPerDevice) {
  int n = 0;
  CU_OK(cuDeviceGetCount(&n));
  ASSERT_EQ(2, n);
  CUmemAllocationProp p0 = device_prop(0), p1 = device_prop(1);
  CUmemGenericAllocationHandle a, b, c;
  CU_OK(cuMemCreate(&a, capacity_, &p0, 0));
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&c, kGran, &p0, 0));
  CU_OK(cuMemCreate(&b, capacity_, &p1, 0));  // device 1 is still empty
  EXPECT_EQ(capacity_, gpusim_device_used(0));
  EXPECT_EQ(capacity_, gpusim_device_used(1));
  // Host-located handles use no device capacity.
  CUmemAllocationProp host = device_prop();
  host.location.type = CU_MEM_LOCATION_TYPE_HOST;
  CU_OK(cuMemCreate(&c, 8 * kMiB, &host, 0));
  CU_OK(cuMemRelease(a));
  CU_OK(cuMemRelease(b));
  CU_OK(cuMemRelease(c));
  EXPECT_EQ(0u, gpusim_device_used(0));
  EXPECT_EQ(0u, gpusim_device_used(1));
}

TEST_F(DriverMultiDevice, CurrentContextFollowsTheRuntimeDevice) {
  CUcontext c1 = nullptr, cur = nullptr;
  CU_OK(cuDevicePrimaryCtxRetain(&c1, 1));
  CU_OK(cuCtxSetCurrent(c1));
  int dev = -1;
  ASSERT_EQ(cudaSuccess, cudaGetDevice(&dev));
  EXPECT_EQ(1, dev);
  CUdevice d = -1;
  CU_OK(cuCtxGetDevice(&d));
  EXPECT_EQ(1, d);
  // cuMemGetInfo reports the current context's device.
  CUmemAllocationProp p1 = device_prop(1);
  CUmemGenericAllocationHandle h;
  CU_OK(cuMemCreate(&h, 8 * kMiB, &p1, 0));
  size_t free_b = 0, total = 0;
  CU_OK(cuMemGetInfo(&free_b, &total));
  EXPECT_EQ(capacity_ - 8 * kMiB, free_b);
  // cudaSetDevice makes the other primary context current.
  ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
  CU_OK(cuCtxGetCurrent(&cur));
  CUcontext c0 = nullptr;
  CU_OK(cuDevicePrimaryCtxRetain(&c0, 0));
  EXPECT_EQ(c0, cur);
  EXPECT_NE(c0, c1);
  CU_OK(cuMemGetInfo(&free_b, &total));
  EXPECT_EQ(capacity_, free_b);
  CU_OK(cuMemRelease(h));
  // A reservation made while device 1 is current belongs to device 1.
  CU_OK(cuCtxSetCurrent(c1));
  CUdeviceptr p = 0;
  CU_OK(cuMemAddressReserve(&p, kGran, 0, 0, 0));
  cudaPointerAttributes attr;
  ASSERT_EQ(cudaSuccess, cudaPointerGetAttributes(&attr, ptr(p)));
  EXPECT_EQ(cudaMemoryTypeDevice, attr.type);
  EXPECT_EQ(1, attr.device);
  CU_OK(cuMemAddressFree(p, kGran));
  CU_OK(cuDevicePrimaryCtxRelease(0));
  CU_OK(cuDevicePrimaryCtxRelease(1));
}

TEST_F(DriverMultiDevice, AccessForBothDevices) {
  CUdeviceptr p = 0;
  CU_OK(cuMemAddressReserve(&p, kGran, 0, 0, 0));
  CUmemAllocationProp prop = device_prop(1);
  CUmemGenericAllocationHandle h;
  CU_OK(cuMemCreate(&h, kGran, &prop, 0));
  CU_OK(cuMemMap(p, kGran, 0, h, 0));
  CUmemAccessDesc a[2] = {rw_access(0, CU_MEM_ACCESS_FLAGS_PROT_READ), rw_access(1)};
  CU_OK(cuMemSetAccess(p, kGran, a, 2));
  EXPECT_EQ("rw-s", perms_at(p));  // the widest right granted
  unsigned long long flags = 0;
  CU_OK(cuMemGetAccess(&flags, &a[0].location, p));
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READ, flags);
  CU_OK(cuMemGetAccess(&flags, &a[1].location, p));
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, flags);
  CU_OK(cuMemUnmap(p, kGran));
  CU_OK(cuMemRelease(h));
  CU_OK(cuMemAddressFree(p, kGran));
}

}  // namespace
