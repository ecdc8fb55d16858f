// The simulated driver (libcuda.so.1) against the CUDA Driver API's
// documented behaviour: initialization, devices, primary contexts, error
// names and cuGetProcAddress. Virtual memory management: driver_vmm_test.cc.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstring>

#include "driver_test_util.h"

using namespace drivertest;

namespace {

// ---- initialization, devices, contexts ----

TEST(DriverInit, CallsBeforeCuInitFail) {
  int v = 0;
  CU_OK(cuDriverGetVersion(&v));  // needs no cuInit
  EXPECT_EQ(CUDA_VERSION, v);
  int n = -1;
  EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
  CUmemGenericAllocationHandle h;
  CUmemAllocationProp prop = device_prop();
  EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cuMemCreate(&h, kGran, &prop, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuInit(1));
  CU_OK(cuInit(0));
  CU_OK(cuInit(0));  // idempotent
  CU_OK(cuDeviceGetCount(&n));
  EXPECT_EQ(1, n);
}

TEST(DriverInit, GetProcAddressWorksBeforeCuInit) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  CU_OK(cuGetProcAddress("cuInit", &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status));
  EXPECT_EQ(CU_GET_PROC_ADDRESS_SUCCESS, status);
  ASSERT_NE(nullptr, fn);
  CU_OK(reinterpret_cast<CUresult (*)(unsigned)>(fn)(0));
  int n = 0;
  CU_OK(cuDeviceGetCount(&n));
}

TEST_F(DriverTest, Devices) {
  CUdevice d = -1;
  CU_OK(cuDeviceGet(&d, 0));
  EXPECT_EQ(0, d);
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&d, 1));
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&d, -1));
  char name[64];
  CU_OK(cuDeviceGetName(name, sizeof(name), 0));
  EXPECT_NE(nullptr, std::strstr(name, "gpusim"));
  size_t total = 0;
  CU_OK(cuDeviceTotalMem(&total, 0));
  EXPECT_EQ(8ull << 30, total);
  CUuuid uuid;
  CU_OK(cuDeviceGetUuid(&uuid, 0));
}

TEST_F(DriverTest, DeviceAttributes) {
  auto attr = [](CUdevice_attribute a) {
    int v = -7;
    EXPECT_EQ(CUDA_SUCCESS, cuDeviceGetAttribute(&v, a, 0));
    return v;
  };
  EXPECT_EQ(9, attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
  EXPECT_EQ(0, attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
  EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED));
  EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED));
  EXPECT_EQ(0, attr(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED));
  EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED));
  EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING));
  EXPECT_EQ(0, attr(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED));  // unknown here: 0
  int v = 0;
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 3));
}

TEST_F(DriverTest, PrimaryContext) {
  CUcontext ctx = nullptr;
  CU_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
  ASSERT_NE(nullptr, ctx);
  unsigned flags = 1;
  int active = 0;
  CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
  EXPECT_EQ(1, active);
  CU_OK(cuCtxSetCurrent(ctx));
  CUcontext cur = nullptr;
  CU_OK(cuCtxGetCurrent(&cur));
  EXPECT_EQ(ctx, cur);
  CUdevice d = -1;
  CU_OK(cuCtxGetDevice(&d));
  EXPECT_EQ(0, d);
  CU_OK(cuCtxGetDevice_v2(&d, nullptr));
  EXPECT_EQ(0, d);
  CU_OK(cuCtxSynchronize());
  CU_OK(cuCtxSynchronize_v2(ctx));

  // Unbound: no current context.
  CU_OK(cuCtxSetCurrent(nullptr));
  CU_OK(cuCtxGetCurrent(&cur));
  EXPECT_EQ(nullptr, cur);
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetDevice(&d));
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuCtxSynchronize());
  size_t free_b, total;
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuMemGetInfo(&free_b, &total));
  CU_OK(cuCtxGetDevice_v2(&d, ctx));  // explicit context still fine
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuCtxSetCurrent(reinterpret_cast<CUcontext>(&d)));
  CU_OK(cuCtxSetCurrent(ctx));

  CU_OK(cuDevicePrimaryCtxRelease(0));
  CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
  EXPECT_EQ(0, active);
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuDevicePrimaryCtxRelease(0));
}

TEST_F(DriverTest, ErrorNames) {
  const char* s = nullptr;
  CU_OK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
  EXPECT_STREQ("CUDA_ERROR_OUT_OF_MEMORY", s);
  CU_OK(cuGetErrorString(CUDA_SUCCESS, &s));
  EXPECT_NE(nullptr, s);
}

// ---- cuGetProcAddress ----

TEST_F(DriverTest, GetProcAddressReturnsWorkingEntryPoints) {
  bind_primary_context();  // cuMemGetInfo acts on the current context
  CUdriverProcAddressQueryResult status;
  void* fn = nullptr;
  // A base name gets the current versioned entry point (cuMemGetInfo_v2).
  CU_OK(cuGetProcAddress("cuMemGetInfo", &fn, CUDA_VERSION, 0, &status));
  EXPECT_EQ(CU_GET_PROC_ADDRESS_SUCCESS, status);
  ASSERT_NE(nullptr, fn);
  size_t free_b = 0, total = 0;
  CU_OK(reinterpret_cast<CUresult (*)(size_t*, size_t*)>(fn)(&free_b, &total));
  EXPECT_EQ(8ull << 30, total);

  CU_OK(cuGetProcAddress("cuMemCreate", &fn, CUDA_VERSION, 0, &status));
  auto create = reinterpret_cast<CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                                              unsigned long long)>(fn);
  CU_OK(cuGetProcAddress("cuMemRelease", &fn, CUDA_VERSION, 0, &status));
  auto release = reinterpret_cast<CUresult (*)(CUmemGenericAllocationHandle)>(fn);
  CUmemAllocationProp prop = device_prop();
  CUmemGenericAllocationHandle h;
  CU_OK(create(&h, kGran, &prop, 0));
  CU_OK(release(h));

  CU_OK(cuGetProcAddress("cuDeviceTotalMem", &fn, CUDA_VERSION, 0, &status));
  CU_OK(reinterpret_cast<CUresult (*)(size_t*, CUdevice)>(fn)(&total, 0));
  EXPECT_EQ(8ull << 30, total);

  // cuGetProcAddress itself: _v2 (with status) from CUDA 12, v1 before.
  CU_OK(cuGetProcAddress("cuGetProcAddress", &fn, 12000, 0, &status));
  using V2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  void* inner = nullptr;
  status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CU_OK(reinterpret_cast<V2>(fn)("cuInit", &inner, CUDA_VERSION, 0, &status));
  EXPECT_EQ(CU_GET_PROC_ADDRESS_SUCCESS, status);
  EXPECT_NE(nullptr, inner);
  CU_OK(cuGetProcAddress("cuGetProcAddress", &fn, 11030, 0, &status));
  using V1 = CUresult (*)(const char*, void**, int, cuuint64_t);
  inner = nullptr;
  CU_OK(reinterpret_cast<V1>(fn)("cuDeviceGetCount", &inner, CUDA_VERSION, 0));
  int n = 0;
  CU_OK(reinterpret_cast<CUresult (*)(int*)>(inner)(&n));
  EXPECT_EQ(1, n);
}

TEST_F(DriverTest, GetProcAddressUnknownSymbol) {
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  void* fn = reinterpret_cast<void*>(1);
  EXPECT_EQ(CUDA_ERROR_NOT_FOUND, cuGetProcAddress("cuNoSuchEntryPoint", &fn, CUDA_VERSION, 0, &status));
  EXPECT_EQ(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, status);
  EXPECT_EQ(nullptr, fn);
  // Only the driver's own entry points (not the runtime's, not libc's).
  EXPECT_EQ(CUDA_ERROR_NOT_FOUND, cuGetProcAddress("cudaMalloc", &fn, CUDA_VERSION, 0, &status));
  EXPECT_EQ(CUDA_ERROR_NOT_FOUND, cuGetProcAddress("malloc", &fn, CUDA_VERSION, 0, &status));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuGetProcAddress("cuInit", &fn, CUDA_VERSION, 1ull << 5, &status));
}

}  // namespace
