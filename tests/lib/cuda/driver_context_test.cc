// cuda/driver_context.h on the simulated device, which binds contexts as a
// real GPU does (a thread has none until one is bound): gpuslack binds the
// primary context where the runtime would have, never replaces the
// application's, and a scoped context leaves the thread as it found it.
// Two devices (GPUSIM_DEVICE_COUNT=2); every case on a fresh thread.
#include "cuda/driver_context.h"

#include <cuda.h>
#include <gtest/gtest.h>

#include <thread>

#include "alloc/process_allocators.h"
#include "cuda/driver_api.h"

namespace gpuslack {
namespace cuda {
namespace {

CUcontext current() {
  CUcontext c = reinterpret_cast<CUcontext>(1);
  EXPECT_EQ(CUDA_SUCCESS, cuCtxGetCurrent(&c));
  return c;
}

CUcontext primary(int device) {
  CUcontext c = nullptr;
  EXPECT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&c, device));
  EXPECT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(device));
  return c;
}

int current_device_of_context() {
  CUdevice d = -1;
  return cuCtxGetDevice(&d) == CUDA_SUCCESS ? d : -1;
}

// Runs `body` on a thread of its own, which starts with no context.
template <typename F>
void on_fresh_thread(F body) {
  ASSERT_NE(nullptr, driver()) << why_no_driver();
  std::thread([&] {
    ASSERT_EQ(nullptr, current());
    body();
  }).join();
}

TEST(BindRuntimeContext, BindsThePrimaryContextAndLeavesIt) {
  on_fresh_thread([] {
    ASSERT_EQ(CUDA_SUCCESS, bind_runtime_context(1));
    EXPECT_EQ(primary(1), current());
    size_t free_b = 0, total = 0;
    EXPECT_EQ(CUDA_SUCCESS, cuMemGetInfo(&free_b, &total));  // the application's next driver call works
    // Bound once: a second call changes nothing.
    ASSERT_EQ(CUDA_SUCCESS, bind_runtime_context(1));
    CUcontext popped = nullptr;
    ASSERT_EQ(CUDA_SUCCESS, cuCtxPopCurrent(&popped));
    EXPECT_EQ(nullptr, current());  // set, not pushed on top of anything
  });
}

TEST(BindRuntimeContext, NeverReplacesTheApplicationsContext) {
  on_fresh_thread([] {
    ASSERT_EQ(CUDA_SUCCESS, cuCtxPushCurrent(primary(1)));
    ASSERT_EQ(CUDA_SUCCESS, bind_runtime_context(0));
    EXPECT_EQ(primary(1), current());
    CUcontext popped = nullptr;
    ASSERT_EQ(CUDA_SUCCESS, cuCtxPopCurrent(&popped));
    EXPECT_EQ(nullptr, current());
  });
}

TEST(ScopedDeviceContext, OnAThreadWithNoneLeavesNone) {
  on_fresh_thread([] {
    {
      ScopedDeviceContext in(1);
      ASSERT_EQ(CUDA_SUCCESS, in.result());
      EXPECT_EQ(1, current_device_of_context());
      size_t free_b = 0, total = 0;
      EXPECT_EQ(CUDA_SUCCESS, cuMemGetInfo(&free_b, &total));
    }
    EXPECT_EQ(nullptr, current());
  });
}

TEST(ScopedDeviceContext, OnAnotherDevicesContextRestoresIt) {
  on_fresh_thread([] {
    ASSERT_EQ(CUDA_SUCCESS, cuCtxSetCurrent(primary(1)));
    {
      ScopedDeviceContext in(0);
      ASSERT_EQ(CUDA_SUCCESS, in.result());
      EXPECT_EQ(0, current_device_of_context());
    }
    EXPECT_EQ(primary(1), current());
    CUcontext popped = nullptr;
    ASSERT_EQ(CUDA_SUCCESS, cuCtxPopCurrent(&popped));
    EXPECT_EQ(nullptr, current());  // nothing left on the stack
  });
}

TEST(ScopedDeviceContext, OnThatDevicesContextDoesNothing) {
  on_fresh_thread([] {
    ASSERT_EQ(CUDA_SUCCESS, cuCtxSetCurrent(primary(0)));
    {
      ScopedDeviceContext in(0);
      ASSERT_EQ(CUDA_SUCCESS, in.result());
      CUcontext popped = nullptr;
      // Only the application's entry is on the stack: nothing was pushed.
      ASSERT_EQ(CUDA_SUCCESS, cuCtxPopCurrent(&popped));
      EXPECT_EQ(nullptr, current());
      ASSERT_EQ(CUDA_SUCCESS, cuCtxSetCurrent(popped));
    }
    EXPECT_EQ(primary(0), current());
  });
}

// The VMM allocator of a device is made from a thread with no context (it
// asks cuMemGetInfo in that device's context), and leaves the thread as it
// was: making it is not a runtime call the application made.
TEST(ProcessAllocators, MadeFromAThreadWithNoContext) {
  on_fresh_thread([] {
    EXPECT_NE(nullptr, alloc::device_allocator(1));
    EXPECT_EQ(nullptr, current());
  });
}

}  // namespace
}  // namespace cuda
}  // namespace gpuslack
