// The context rules of the simulated driver and runtime, each as NVIDIA
// documents it (README.md, "Contexts"): a thread has no context until one
// is bound; the driver's context stack; primary contexts; the calls that
// need a current context fail without one; the runtime binds the primary
// context of the thread's device at its first call that needs a context,
// and on cudaSetDevice. Two devices (GPUSIM_DEVICE_COUNT=2). Each test case
// runs as its own process, so "the first call" is the first of the process.
//
// Sources quoted:
//   [ctx]  CUDA Driver API, Context Management (cuCtxGetCurrent,
//          cuCtxSetCurrent, cuCtxPushCurrent, cuCtxPopCurrent,
//          cuCtxGetDevice, cuCtxSynchronize).
//   [pctx] CUDA Driver API, Primary Context Management.
//   [mem]  CUDA Driver API, Memory Management (cuMemGetInfo: "the current
//          context"; cuMemGetAddressRange) and Virtual Memory Management
//          (cuMemCreate, cuMemAddressReserve, ...: they name their device
//          and their documented errors do not include
//          CUDA_ERROR_INVALID_CONTEXT).
//   [mod]  CUDA Driver API, Module Management (cuModuleLoadData: "into the
//          current context").
//   [strm] CUDA Driver API, Stream Management (cuStreamGetCtx: "If no
//          context is current to the calling thread,
//          CUDA_ERROR_INVALID_CONTEXT is returned").
//   [rt]   CUDA Runtime API, Interactions with the CUDA Driver API,
//          "Primary Contexts" and "Initialization and Tear-Down".
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <thread>

#include "driver_test_util.h"

namespace {

using drivertest::DriverTest;
using drivertest::kGran;

CUcontext current() {
  CUcontext c = reinterpret_cast<CUcontext>(1);
  EXPECT_EQ(CUDA_SUCCESS, cuCtxGetCurrent(&c));
  return c;
}

// The device's primary context, retained (and so active) from now on.
CUcontext primary(int device) {
  CUcontext c = nullptr;
  EXPECT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&c, device));
  return c;
}

bool active(int device) {
  unsigned flags = 0;
  int on = -1;
  EXPECT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxGetState(device, &flags, &on));
  return on == 1;
}

// [ctx] cuCtxGetCurrent: "If no context is bound to the calling CPU thread
// then *pctx is set to NULL and CUDA_SUCCESS is returned."
TEST_F(DriverTest, AThreadStartsWithNoContext) {
  EXPECT_EQ(nullptr, current());
  std::thread([] { EXPECT_EQ(nullptr, current()); }).join();
  EXPECT_FALSE(active(0));
}

// The calls that act on the current context fail without one.
TEST_F(DriverTest, CallsOnTheCurrentContextFailWithoutOne) {
  CUdevice d = -1;
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetDevice(&d));    // [ctx]
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuCtxSynchronize());    // [ctx]
  CUcontext popped = nullptr;
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuCtxPopCurrent(&popped));  // [ctx]: nothing to pop
  size_t free_b = 0, total = 0;
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuMemGetInfo(&free_b, &total));  // [mem]
  CUdeviceptr base = 0;
  size_t size = 0;
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuMemGetAddressRange(&base, &size, 4096));  // [mem]
  CUcontext of_stream = nullptr;
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuStreamGetCtx(nullptr, &of_stream));  // [strm]
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuStreamGetCtx(CU_STREAM_PER_THREAD, &of_stream));
  CUmodule m = nullptr;
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuModuleLoadData(&m, "image"));  // [mod]
  // With the primary context bound, each works.
  CU_OK(cuCtxSetCurrent(primary(0)));
  CU_OK(cuCtxGetDevice(&d));
  EXPECT_EQ(0, d);
  CU_OK(cuMemGetInfo(&free_b, &total));
  CU_OK(cuStreamGetCtx(nullptr, &of_stream));
  EXPECT_EQ(current(), of_stream);
  CU_OK(cuModuleLoadData(&m, "image"));
  CU_OK(cuModuleUnload(m));
}

// [mem] The virtual memory management calls name their device (in the
// allocation's properties, the access descriptors) and need no context.
TEST_F(DriverTest, VirtualMemoryCallsNeedNoContext) {
  CUmemAllocationProp prop = drivertest::device_prop(1);
  size_t gran = 0;
  CU_OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUdeviceptr va = 0;
  CU_OK(cuMemAddressReserve(&va, kGran, 0, 0, 0));
  CUmemGenericAllocationHandle h = 0;
  CU_OK(cuMemCreate(&h, kGran, &prop, 0));
  CU_OK(cuMemMap(va, kGran, 0, h, 0));
  CUmemAccessDesc access = drivertest::rw_access(1);
  CU_OK(cuMemSetAccess(va, kGran, &access, 1));
  static_cast<volatile char*>(drivertest::ptr(va))[0] = 1;
  CU_OK(cuMemUnmap(va, kGran));
  CU_OK(cuMemRelease(h));
  CU_OK(cuMemAddressFree(va, kGran));
  EXPECT_EQ(nullptr, current());  // and none of them bound one
}

// Device and version queries need no context, in either API, and bind none:
// [rt] only "a CUDA Runtime API call which requires an active context" does.
TEST_F(DriverTest, QueriesBindNoContext) {
  CUdevice dev = -1;
  CU_OK(cuDeviceGet(&dev, 1));
  int v = 0;
  CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev));
  int n = 0;
  ASSERT_EQ(cudaSuccess, cudaGetDeviceCount(&n));
  EXPECT_EQ(2, n);
  int d = -1;
  ASSERT_EQ(cudaSuccess, cudaGetDevice(&d));
  EXPECT_EQ(0, d);  // the runtime's default device, with no context bound
  cudaDeviceProp props;
  ASSERT_EQ(cudaSuccess, cudaGetDeviceProperties(&props, 0));
  ASSERT_EQ(cudaSuccess, cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0));
  ASSERT_EQ(cudaSuccess, cudaDriverGetVersion(&v));
  EXPECT_EQ(nullptr, current());
  EXPECT_FALSE(active(0));
  EXPECT_FALSE(active(1));
}

// [pctx] Retaining does not make the context current; the last release
// makes it inactive; releasing one never retained is
// CUDA_ERROR_INVALID_CONTEXT; "Resetting the primary context does not
// release it".
TEST_F(DriverTest, PrimaryContextReferences) {
  CUcontext c = primary(1);
  ASSERT_NE(nullptr, c);
  EXPECT_EQ(nullptr, current());
  EXPECT_TRUE(active(1));
  EXPECT_FALSE(active(0));
  EXPECT_EQ(c, primary(1));  // one primary context per device
  CU_OK(cuDevicePrimaryCtxRelease(1));
  EXPECT_TRUE(active(1));
  CU_OK(cuDevicePrimaryCtxReset(1));
  EXPECT_TRUE(active(1));
  CU_OK(cuDevicePrimaryCtxRelease(1));
  EXPECT_FALSE(active(1));
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuDevicePrimaryCtxRelease(1));
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cuDevicePrimaryCtxRelease(2));
}

// [ctx] The context stack: cuCtxSetCurrent "will replace the top of that
// stack", and with NULL "will be equivalent to popping the top ... (or a
// no-op if the calling CPU thread's CUDA context stack is empty)";
// cuCtxPushCurrent makes the pushed context current; cuCtxPopCurrent
// "makes that context current to the CPU thread again".
TEST_F(DriverTest, TheContextStack) {
  CUcontext c0 = primary(0), c1 = primary(1);
  CU_OK(cuCtxSetCurrent(nullptr));  // empty: a no-op
  EXPECT_EQ(nullptr, current());
  CU_OK(cuCtxSetCurrent(c0));  // onto the empty stack
  EXPECT_EQ(c0, current());
  CU_OK(cuCtxPushCurrent(c1));
  EXPECT_EQ(c1, current());
  CUdevice d = -1;
  CU_OK(cuCtxGetDevice(&d));
  EXPECT_EQ(1, d);
  CUcontext popped = nullptr;
  CU_OK(cuCtxPopCurrent(&popped));
  EXPECT_EQ(c1, popped);
  EXPECT_EQ(c0, current());
  // Replacing the top leaves what lies below.
  CU_OK(cuCtxPushCurrent(c1));
  CU_OK(cuCtxSetCurrent(c0));
  EXPECT_EQ(c0, current());
  CU_OK(cuCtxPopCurrent(&popped));
  EXPECT_EQ(c0, popped);
  EXPECT_EQ(c0, current());  // the bottom one
  CU_OK(cuCtxSetCurrent(nullptr));  // pops it
  EXPECT_EQ(nullptr, current());
  int bogus = 0;
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuCtxSetCurrent(reinterpret_cast<CUcontext>(&bogus)));
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuCtxPushCurrent(nullptr));
}

// [rt] "If no CUcontext is current to the calling thread when a CUDA
// Runtime API call which requires an active context is made, then the
// primary context for a device will be selected, made current to the
// calling thread, and initialized." The process's first call here is
// cudaMalloc.
TEST(RuntimeContext, FirstCallBindsThePrimaryContext) {
  void* p = nullptr;
  ASSERT_EQ(cudaSuccess, cudaMalloc(&p, 1 << 20));
  ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
  EXPECT_EQ(primary(0), current());
  EXPECT_TRUE(active(0));
  EXPECT_FALSE(active(1));
  ASSERT_EQ(cudaSuccess, cudaFree(p));
}

// The same on a thread of its own: binding is per thread.
TEST(RuntimeContext, EachThreadsFirstCallBindsItsOwn) {
  ASSERT_EQ(cudaSuccess, cudaFree(nullptr));  // binds on this thread
  ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
  CUcontext c0 = primary(0);
  EXPECT_EQ(c0, current());
  std::thread([c0] {
    EXPECT_EQ(nullptr, current());
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaSuccess, cudaStreamCreate(&s));
    EXPECT_EQ(c0, current());
    ASSERT_EQ(cudaSuccess, cudaStreamDestroy(s));
  }).join();
}

// [rt] "cudaSetDevice() initializes the primary context for the specified
// device and makes it current to the calling thread by calling
// cuCtxSetCurrent()": so it replaces the top of the stack.
TEST(RuntimeContext, SetDeviceBindsThatDevicesPrimaryContext) {
  ASSERT_EQ(cudaSuccess, cudaSetDevice(1));
  ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
  CUcontext c1 = primary(1);
  EXPECT_EQ(c1, current());
  EXPECT_FALSE(active(0));  // device 0 was never initialized
  void* p = nullptr;
  ASSERT_EQ(cudaSuccess, cudaMalloc(&p, 4096));
  cudaPointerAttributes a;
  ASSERT_EQ(cudaSuccess, cudaPointerGetAttributes(&a, p));
  EXPECT_EQ(1, a.device);
  ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
  EXPECT_EQ(primary(0), current());
  CUcontext popped = nullptr;
  CU_OK(cuCtxPopCurrent(&popped));  // one entry: replaced, not pushed
  EXPECT_EQ(nullptr, current());
  ASSERT_EQ(cudaSuccess, cudaFree(p));
}

// [rt] "CUDA Runtime API calls operate on the CUDA Driver API CUcontext
// which is current to the calling host thread": a context the application
// made current is used, its device is the runtime's, and it stays bound.
TEST(RuntimeContext, RuntimeCallsUseTheApplicationsContext) {
  ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
  CUcontext c1 = primary(1);
  std::thread([c1] {
    CU_OK(cuCtxPushCurrent(c1));
    int d = -1;
    ASSERT_EQ(cudaSuccess, cudaGetDevice(&d));
    EXPECT_EQ(1, d);
    void* p = nullptr;
    ASSERT_EQ(cudaSuccess, cudaMalloc(&p, 4096));
    cudaPointerAttributes a;
    ASSERT_EQ(cudaSuccess, cudaPointerGetAttributes(&a, p));
    EXPECT_EQ(1, a.device);
    EXPECT_EQ(c1, current());
    CUcontext popped = nullptr;
    CU_OK(cuCtxPopCurrent(&popped));
    EXPECT_EQ(c1, popped);
    EXPECT_EQ(nullptr, current());  // the runtime pushed nothing of its own
    ASSERT_EQ(cudaSuccess, cudaFree(p));
  }).join();
}

// A thread that unbound its context gets its device's primary context
// back at its next runtime call that needs one.
TEST(RuntimeContext, UnboundThreadIsBoundAgain) {
  ASSERT_EQ(cudaSuccess, cudaSetDevice(1));
  ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
  CU_OK(cuCtxSetCurrent(nullptr));
  EXPECT_EQ(nullptr, current());
  int d = -1;
  ASSERT_EQ(cudaSuccess, cudaGetDevice(&d));
  EXPECT_EQ(1, d);  // the thread's device stays
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  EXPECT_EQ(primary(1), current());
}

}  // namespace
