// MappingPolicy: a miss grows the mapped total freely up to the larger of
// the mapped and the allocated high-water marks (the latter with an eighth
// of slack), maps whole pages only for large requests on a device less than
// a quarter full, and waits for fenced frees as long as mapping would take,
// within the floor and the ceiling.
#include "alloc/mapping_policy.h"

#include <gtest/gtest.h>

#include "alloc/block_manager.h"

namespace gpuslack {
namespace alloc {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

TEST(MappingPolicy, GrowsFreelyUpToTheLargerHighWaterMark) {
  MappingPolicy p(1024 * kMiB);
  EXPECT_EQ(0u, p.growth(0));  // nothing ever mapped or allocated
  p.note_peaks(100 * kMiB, 64 * kMiB);
  EXPECT_EQ(100 * kMiB, p.growth(0));
  EXPECT_EQ(40 * kMiB, p.growth(60 * kMiB));
  EXPECT_EQ(0u, p.growth(100 * kMiB));
  EXPECT_EQ(0u, p.growth(120 * kMiB));  // past the ceiling: nothing
  // The allocated mark with 1/8 of slack passes the mapped one.
  p.note_peaks(50 * kMiB, 96 * kMiB);
  EXPECT_EQ(96 * kMiB + 96 * kMiB / MappingPolicy::kGrowthSlack, p.growth(0));
  // High-water marks: lower values change nothing.
  p.note_peaks(0, 0);
  EXPECT_EQ(108 * kMiB, p.growth(0));
}

TEST(MappingPolicy, MapsWholePagesOnlyForLargeRequestsOnALightlyFilledDevice) {
  MappingPolicy p(1024 * kMiB);  // pages up to 256 MiB mapped
  const uint64_t large = BlockManager::kSmallLimit + 1;
  EXPECT_TRUE(p.in_pages(large, 0));
  EXPECT_FALSE(p.in_pages(BlockManager::kSmallLimit, 0));  // a small-pool page: never
  EXPECT_TRUE(p.in_pages(large, 256 * kMiB - large));
  EXPECT_FALSE(p.in_pages(large, 256 * kMiB - large + 1));
}

// GranuleMap's Note [One handle for a long run]: a long run is one handle
// only while it stays within a share of the most ever allocated.
TEST(MappingPolicy, OneHandleForALongRunHoldsAShareOfTheAllocatedHighWaterMark) {
  MappingPolicy p(1024 * kMiB);
  EXPECT_EQ(0u, p.long_run_bytes(0, 0));  // nothing allocated yet: pages only
  p.note_peaks(0, 600 * kMiB);
  EXPECT_EQ(600 * kMiB / MappingPolicy::kLongRunShare, p.long_run_bytes(0, 0));
  p.note_peaks(0, 60 * kMiB);  // a high-water mark: lower values change nothing
  EXPECT_EQ(600 * kMiB / MappingPolicy::kLongRunShare, p.long_run_bytes(0, 0));
}

// GranuleMap's Note [Two pages make a long run]: no long run once the
// mapped total, with the miss, is past an eighth of the device.
TEST(MappingPolicy, NoLongRunPastAnEighthOfTheDevice) {
  MappingPolicy p(1024 * kMiB);
  p.note_peaks(0, 600 * kMiB);
  const uint64_t share = 600 * kMiB / MappingPolicy::kLongRunShare;
  const uint64_t eighth = 1024 * kMiB / MappingPolicy::kLongRunsUpTo;
  ASSERT_EQ(128 * kMiB, eighth);
  EXPECT_EQ(share, p.long_run_bytes(eighth - 40 * kMiB, 40 * kMiB));
  EXPECT_EQ(0u, p.long_run_bytes(eighth - 40 * kMiB, 40 * kMiB + 1));
  EXPECT_EQ(0u, p.long_run_bytes(eighth + 1, 0));
}

TEST(MappingPolicy, WaitsAsLongAsMappingWouldTakeWithinBounds) {
  MappingPolicy p(1024 * kMiB);
  EXPECT_FALSE(p.knows_map_cost());
  p.note_map_cost(0.001, 0);  // nothing mapped: no measure
  p.note_map_cost(0, kMiB);
  EXPECT_FALSE(p.knows_map_cost());
  p.note_map_cost(0.001, 2 * kMiB);  // 0.5 ms per MiB
  EXPECT_TRUE(p.knows_map_cost());
  EXPECT_DOUBLE_EQ(0.002, p.fence_wait(4 * kMiB));
  EXPECT_DOUBLE_EQ(MappingPolicy::kMinFenceWait, p.fence_wait(256));
  EXPECT_DOUBLE_EQ(MappingPolicy::kMaxFenceWait, p.fence_wait(1024 * kMiB));
  // A moving average: a quarter of the new measure.
  p.note_map_cost(0.009, 2 * kMiB);  // 4.5 ms per MiB
  EXPECT_DOUBLE_EQ(0.75 * 0.0005 + 0.25 * 0.0045, p.fence_wait(kMiB));
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack
