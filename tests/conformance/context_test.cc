// Contexts: CUDA Runtime API, "Interactions with the CUDA Driver API"
// ("If no CUcontext is current to the calling thread when a CUDA Runtime
// API call which requires an active context is made, then the primary
// context for a device will be selected, made current to the calling
// thread, and initialized"), and the Driver API's "Context Management"
// (cuCtxGetCurrent: "If no context is bound to the calling CPU thread then
// *pctx is set to NULL"). gpuslack's own driver calls rest on this
// (lib/cuda/driver_context.h, tests/interpose/context_test.cc). Each test
// runs on a fresh thread: the main thread has a context already.
#include <thread>

#include "conformance.h"

using namespace conformance;

namespace {

// A thread has no current context until the runtime initializes the device
// on it; then it has the device's primary context.
TEST(Contexts, ARuntimeThreadGetsThePrimaryContextAtItsFirstDeviceCall) {
  CUcontext before = reinterpret_cast<CUcontext>(1), after = nullptr, primary = nullptr;
  CUresult r1 = CUDA_ERROR_UNKNOWN, r2 = CUDA_ERROR_UNKNOWN;
  cudaError_t m = cudaErrorUnknown;
  std::thread([&] {
    r1 = cuCtxGetCurrent(&before);
    void* p = nullptr;
    m = cudaMalloc(&p, 4096);
    r2 = cuCtxGetCurrent(&after);
    cudaFree(p);
  }).join();
  ASSERT_EQ(CUDA_SUCCESS, r1);
  ASSERT_EQ(CUDA_SUCCESS, r2);
  ASSERT_EQ(cudaSuccess, m);
  EXPECT_EQ(nullptr, before);
  CUdevice dev;
  CU_OK(cuDeviceGet(&dev, 0));
  CU_OK(cuDevicePrimaryCtxRetain(&primary, dev));
  EXPECT_EQ(primary, after);
  CU_OK(cuDevicePrimaryCtxRelease(dev));
}

// A thread that only calls the driver has no context: calls acting on the
// current context fail with CUDA_ERROR_INVALID_CONTEXT ("Context
// Management": cuCtxGetDevice, cuCtxSynchronize).
TEST(Contexts, ADriverOnlyThreadHasNone) {
  CUcontext c = reinterpret_cast<CUcontext>(1);
  CUresult get = CUDA_ERROR_UNKNOWN, dev = CUDA_SUCCESS, sync = CUDA_SUCCESS;
  std::thread([&] {
    get = cuCtxGetCurrent(&c);
    CUdevice d;
    dev = cuCtxGetDevice(&d);
    sync = cuCtxSynchronize();
  }).join();
  EXPECT_EQ(CUDA_SUCCESS, get);
  EXPECT_EQ(nullptr, c);
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, dev);
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, sync);
}

// Device queries need no context and bind none (cudaGetDeviceCount,
// cudaGetDevice: "Device Management").
TEST(Contexts, DeviceQueriesBindNoContext) {
  CUcontext c = reinterpret_cast<CUcontext>(1);
  int n = 0, d = -1;
  std::thread([&] {
    cudaGetDeviceCount(&n);
    cudaGetDevice(&d);
    cuCtxGetCurrent(&c);
  }).join();
  EXPECT_GE(n, 1);
  EXPECT_EQ(0, d);
  EXPECT_EQ(nullptr, c);
}

}  // namespace
