// GranuleMap on the simulated driver: granules mapped on demand and only
// where asked, physical memory accounted by the device, released granules
// given back, and every failure undone (no mapping, no handle left behind).
#include "alloc/granule_map.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "cuda/driver_api.h"
#include "gpusim.h"

namespace gpuslack {
namespace alloc {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

const cuda::DriverApi* api() {
  const cuda::DriverApi* a = cuda::driver();
  EXPECT_NE(nullptr, a) << cuda::why_no_driver();
  return a;
}

TEST(GranuleMap, MapsOnlyTheGranulesAskedFor) {
  GranuleMap m(api(), 0, 64 * kMiB);
  ASSERT_TRUE(m.ok()) << m.why();
  EXPECT_EQ(2 * kMiB, m.granularity());
  EXPECT_EQ(64 * kMiB, m.size());
  size_t before = gpusim_device_used(0);
  ASSERT_EQ(CUDA_SUCCESS, m.map(3 * kMiB, 2 * kMiB));  // spans granules 1 and 2
  EXPECT_EQ(2u, m.mapped_granules());
  EXPECT_EQ(before + 4 * kMiB, gpusim_device_used(0));  // physical memory, per granule
  EXPECT_FALSE(m.mapped(0));
  EXPECT_TRUE(m.mapped(2 * kMiB));
  EXPECT_TRUE(m.mapped(5 * kMiB));
  EXPECT_FALSE(m.mapped(6 * kMiB));
  // The mapped range is usable memory (the simulated device is host memory).
  char* p = reinterpret_cast<char*>(m.base() + 2 * kMiB);
  std::memset(p, 0x5a, 4 * kMiB);
  EXPECT_EQ(0x5a, p[4 * kMiB - 1]);
  ASSERT_EQ(CUDA_SUCCESS, m.map(2 * kMiB, 1));  // already mapped: nothing new
  EXPECT_EQ(2u, m.granules_mapped_total());
}

TEST(GranuleMap, UnmapsOnlyWholeGranulesAndGivesTheMemoryBack) {
  GranuleMap m(api(), 0, 32 * kMiB);
  ASSERT_TRUE(m.ok()) << m.why();
  size_t before = gpusim_device_used(0);
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, 8 * kMiB));
  EXPECT_EQ(0u, m.unmap(1 * kMiB, 2 * kMiB));  // no granule wholly inside
  EXPECT_EQ(2u, m.unmap(2 * kMiB, 5 * kMiB));  // granules 1 and 2 (3 only half)
  EXPECT_FALSE(m.mapped(2 * kMiB));
  EXPECT_TRUE(m.mapped(6 * kMiB));
  EXPECT_EQ(before + 4 * kMiB, gpusim_device_used(0));
  EXPECT_EQ(2u, m.unmap(0, 32 * kMiB));
  EXPECT_EQ(before, gpusim_device_used(0));
  EXPECT_EQ(4u, m.granules_unmapped_total());
}

TEST(GranuleMap, DestructionReleasesEverything) {
  size_t before = gpusim_device_used(0);
  {
    GranuleMap m(api(), 0, 16 * kMiB);
    ASSERT_TRUE(m.ok());
    ASSERT_EQ(CUDA_SUCCESS, m.map(0, 16 * kMiB));
    EXPECT_EQ(before + 16 * kMiB, gpusim_device_used(0));
  }
  EXPECT_EQ(before, gpusim_device_used(0));
}

TEST(GranuleMap, OutOfMemoryUndoesThePartialMap) {
  // GPUSIM_DEVICE_MEMORY is 16M for this test binary: a 10-granule map
  // fails on the 9th and leaves nothing behind.
  GranuleMap m(api(), 0, 64 * kMiB);
  ASSERT_TRUE(m.ok());
  size_t before = gpusim_device_used(0);
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, m.map(0, 20 * kMiB));
  EXPECT_EQ(0u, m.mapped_granules());
  EXPECT_EQ(before, gpusim_device_used(0));
  EXPECT_EQ(CUDA_SUCCESS, m.map(0, 16 * kMiB));  // what fits still maps
}

TEST(GranuleMap, BadArgumentsAreRefused) {
  GranuleMap m(api(), 0, 8 * kMiB);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, m.map(0, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, m.map(6 * kMiB, 4 * kMiB));  // past the end
  EXPECT_EQ(0u, m.unmap(100 * kMiB, kMiB));
  GranuleMap none(api(), 7, 8 * kMiB);  // no device 7
  EXPECT_FALSE(none.ok());
  EXPECT_NE("", none.why());
  GranuleMap no_driver(nullptr, 0, 8 * kMiB);
  EXPECT_FALSE(no_driver.ok());
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack
