// DeviceAllocator under memory pressure on the simulated device (64 MiB,
// set by CMake), with pages of 20 MiB as the library makes them: before an
// allocation fails, every cached byte no live block holds goes back (each
// stream's cache and held ranges, the thread's front cache, stream-less
// frees, the free space of mapped pages) and the request is retried; a
// miss maps its pages whole (GranuleMap's Note [Pages mapped whole]) with
// one cuMemSetAccess (Note [Access once per mapped range]).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "alloc/device_allocator.h"
#include "cuda/driver_api.h"
#include "gpusim.h"
#include "sim_driver.h"
#include "sync/stream_registry.h"

namespace gpuslack {
namespace alloc {
namespace {

using test_support::kMiB;
using test_support::non_blocking;

constexpr uint64_t kPage = 20 * kMiB;

TEST(DeviceAllocatorPressure, ARequestThatFitsOnlyOnceEveryCacheIsReleasedSucceeds) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0, kPage);
  ASSERT_TRUE(a.ok());
  cudaStream_t s1 = non_blocking(), s2 = non_blocking();
  // Cached everywhere the allocator caches, nothing live at the end:
  void* held = a.allocate(24 * kMiB, s1);  // a large block freed on s1: held for s1
  void* other = a.allocate(12 * kMiB, s2);  // on s2: held for s2
  void* plain = a.allocate(6 * kMiB);      // stream-less: an epoch
  void* small = a.allocate(64 << 10, s1);  // a small block freed on s1: this thread's front cache
  ASSERT_TRUE(held && other && plain && small);
  ASSERT_TRUE(a.free(held, s1));
  ASSERT_TRUE(a.free(other, s2));
  ASSERT_TRUE(a.free(plain));
  ASSERT_TRUE(a.free(small, s1));
  DeviceStats before = a.stats();
  EXPECT_GE(before.reserved, 42 * kMiB);
  EXPECT_EQ(0u, before.allocated);
  // 60 of the device's 64 MiB, in one block: only once all of the above is
  // given back (unmapped where no placement can reuse it) does it fit.
  void* big = a.allocate(60 * kMiB);
  ASSERT_NE(nullptr, big) << "cached memory was not all released before failing";
  DeviceStats s = a.stats();
  EXPECT_EQ(0u, s.failed_allocations);
  EXPECT_GE(s.oom_retries, 1u);
  EXPECT_LE(s.reserved, 64 * kMiB);
  EXPECT_EQ(60 * kMiB, s.allocated);
  // Beyond the device even with nothing cached: nullptr, nothing leaks.
  EXPECT_EQ(nullptr, a.allocate(8 * kMiB, s1));
  EXPECT_EQ(1u, a.stats().failed_allocations);
  ASSERT_TRUE(a.free(big));
  EXPECT_NE(nullptr, a.allocate(8 * kMiB, s1));  // and serves again once it fits
  cudaStreamSynchronize(s1);
  cudaStreamSynchronize(s2);
}

TEST(DeviceAllocatorPressure, AMissMapsItsPagesWholeWithOneAccessCallUpToAQuarterOfTheDevice) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0, kPage);
  ASSERT_TRUE(a.ok());
  long accesses = gpusim_calls("cuMemSetAccess"), creates = gpusim_calls("cuMemCreate");
  void* p = a.allocate(4 * kMiB);
  ASSERT_NE(nullptr, p);
  DeviceStats s = a.stats();
  EXPECT_EQ(kPage, s.reserved);  // the whole first page
  EXPECT_EQ(1u, s.chunks_mapped);
  // Later blocks in the page map nothing.
  void* q = a.allocate(8 * kMiB);
  void* r = a.allocate(6 * kMiB);
  ASSERT_TRUE(q && r);
  EXPECT_EQ(1, gpusim_calls("cuMemCreate") - creates);
  EXPECT_EQ(1, gpusim_calls("cuMemSetAccess") - accesses);
  // Past a quarter of the 64 MiB device: the block's own granules, one
  // handle each, still with one access call (18..28 MiB: granules 10-13).
  void* t = a.allocate(10 * kMiB);
  ASSERT_NE(nullptr, t);
  EXPECT_EQ(5, gpusim_calls("cuMemCreate") - creates);
  EXPECT_EQ(2, gpusim_calls("cuMemSetAccess") - accesses);
  EXPECT_EQ(kPage + 8 * kMiB, a.stats().reserved);
}

TEST(DeviceAllocatorPressure, ASmallBlocksPageIsNeverAWholePage) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0, kPage);
  ASSERT_TRUE(a.ok());
  // A 4 KiB block that lives all run must not pin 20 MiB.
  void* small = a.allocate(4096);
  ASSERT_NE(nullptr, small);
  EXPECT_EQ(2 * kMiB, a.stats().reserved);
}

TEST(DeviceAllocatorPressure, PastAQuarterOfTheDeviceEveryGranuleCanBeGivenBack) {
  sync::reset_streams();
  DeviceAllocator a(cuda::driver(), 0, 256 * kMiB, 0, kPage);
  ASSERT_TRUE(a.ok());
  // 58 MiB at once: past a quarter of the device, 29 granules, 29 handles.
  void* x = a.allocate(58 * kMiB);
  ASSERT_NE(nullptr, x);
  DeviceStats s = a.stats();
  EXPECT_EQ(58 * kMiB, s.reserved);
  EXPECT_EQ(29u, s.chunks_mapped);
  // A small block pins one granule of x's range once x is freed; a 62 MiB
  // request fits only if every other granule is given back.
  void* pin = a.allocate(4 * kMiB);
  ASSERT_NE(nullptr, pin);
  ASSERT_TRUE(a.free(x));
  void* y = a.allocate(56 * kMiB);
  ASSERT_NE(nullptr, y);
  EXPECT_EQ(0u, a.stats().failed_allocations);
  EXPECT_LE(a.stats().reserved, 64 * kMiB);
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack
