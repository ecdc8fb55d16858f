// GranuleMap under injected driver failures (GPUSIM_FAIL, set by CMake):
// each failing step is undone and the next attempt succeeds.
#include <gtest/gtest.h>

#include "alloc/granule_map.h"
#include "gpusim.h"
#include "sim_driver.h"

namespace gpuslack {
namespace alloc {
namespace {

using test_support::kMiB;

// GPUSIM_FAIL=cuMemCreate:2,cuMemMap:4,cuMemSetAccess:1 (one access call per
// map(): Note [Access once per mapped range])
TEST(GranuleMapFaults, EachFailingStepIsUndone) {
  GranuleMap m(cuda::driver(), 0, 64 * kMiB);
  ASSERT_TRUE(m.ok()) << m.why();
  size_t before = gpusim_device_used(0);
  // Create #1 ok, create #2 fails: the first granule is unmapped again.
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, m.map(0, 4 * kMiB));
  EXPECT_EQ(0u, m.mapped_granules());
  EXPECT_EQ(before, gpusim_device_used(0));
  // Maps #2 and #3 ok, map #4 fails: its handle is released too.
  EXPECT_NE(CUDA_SUCCESS, m.map(0, 6 * kMiB));
  EXPECT_EQ(0u, m.mapped_granules());
  EXPECT_EQ(before, gpusim_device_used(0));
  // Every chunk mapped, then the one access call (#1) fails: all undone.
  EXPECT_NE(CUDA_SUCCESS, m.map(0, 6 * kMiB));
  EXPECT_EQ(0u, m.mapped_granules());
  EXPECT_EQ(before, gpusim_device_used(0));
  // The faults are spent: now it maps.
  EXPECT_EQ(CUDA_SUCCESS, m.map(0, 6 * kMiB));
  EXPECT_EQ(3u, m.mapped_granules());
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack
