// DeviceAllocator under injected driver failures (GPUSIM_FAIL, set by
// CMake): a failed map is retried after a trim, and nothing leaks.
#include <gtest/gtest.h>

#include "alloc/device_allocator.h"
#include "gpusim.h"
#include "sim_driver.h"

namespace gpuslack {
namespace alloc {
namespace {

using test_support::kMiB;

// GPUSIM_FAIL=cuMemCreate:1,cuMemMap:3,cuMemSetAccess:5
TEST(DeviceAllocatorFaults, FailedStepsAreRetriedCleanly) {
  size_t before = gpusim_device_used(0);
  DeviceAllocator a(cuda::driver(), 0, 64 * kMiB, 0);
  ASSERT_TRUE(a.ok()) << a.why();
  void* p = a.allocate(kMiB);  // create #1 fails (out of memory): trimmed, retried
  ASSERT_NE(nullptr, p);
  void* q = a.allocate(4 * kMiB);  // map #3 fails on the way: retried
  ASSERT_NE(nullptr, q);
  void* r = a.allocate(4 * kMiB);  // set-access #5 fails: retried
  ASSERT_NE(nullptr, r);
  EXPECT_GE(a.stats().oom_retries, 1u);
  EXPECT_EQ(before + a.stats().reserved, gpusim_device_used(0));  // no handle leaked
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack
