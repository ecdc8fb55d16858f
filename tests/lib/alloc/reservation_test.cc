// Reservation on the simulated driver: where blocks go against what is
// mapped (Note [Placement by cost] in lib/alloc/block_manager.h).
#include "alloc/reservation.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "sim_driver.h"

namespace gpuslack {
namespace alloc {
namespace {

using test_support::api;
using test_support::kMiB;

// Free ranges [4, 12) MiB, unmapped, and [16, 32) MiB, mapped: an 8 MiB
// block fits the first best, and goes to the second, where nothing is left
// to map.
class MappedAndUnmappedHoles : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(r_.ok()) << r_.why();
    base_ = r_.map().base();
    for (uint64_t mib : {4, 8, 4, 16, 4}) {
      CUresult e = CUDA_SUCCESS;
      std::optional<uintptr_t> a = r_.allocate_mapping(mib * kMiB, Reservation::kNoBudget, &e);
      ASSERT_TRUE(a) << e;
      at_.push_back(*a);
    }
    ASSERT_EQ(base_ + 16 * kMiB, at_[3]);
    r_.release(at_[1]);  // [4, 12)
    r_.release(at_[3]);  // [16, 32)
    ASSERT_EQ(24 * kMiB, r_.trim());  // 4 + 8 granules
    // [16, 32) mapped again, and freed: cached.
    CUresult e = CUDA_SUCCESS;
    std::optional<uintptr_t> again = r_.allocate_mapping(16 * kMiB, Reservation::kNoBudget, &e);
    ASSERT_TRUE(again) << e;
    ASSERT_EQ(base_ + 16 * kMiB, *again);
    r_.release(*again);
    mapped_before_ = r_.map().granules_mapped_total();
  }

  Reservation r_{api(), 0, 64 * kMiB, 2 * kMiB};
  uintptr_t base_ = 0;
  std::vector<uintptr_t> at_;
  uint64_t mapped_before_ = 0;
};

TEST_F(MappedAndUnmappedHoles, AllocateMappedFindsTheMappedRangeBehindTheBestFit) {
  EXPECT_FALSE(r_.map().mapped_range(4 * kMiB, 8 * kMiB));
  std::optional<uintptr_t> a = r_.allocate_mapped(8 * kMiB);
  ASSERT_TRUE(a);
  EXPECT_EQ(base_ + 16 * kMiB, *a);
  EXPECT_EQ(mapped_before_, r_.map().granules_mapped_total());
  // Nothing mapped holds 12 MiB (only [36, 64) does, unmapped): no block,
  // and nothing changes.
  uint64_t allocated = r_.allocated(), largest = r_.largest_free();
  EXPECT_FALSE(r_.allocate_mapped(12 * kMiB));
  EXPECT_EQ(allocated, r_.allocated());
  EXPECT_EQ(largest, r_.largest_free());
  EXPECT_EQ(0u, r_.size_of(base_ + 36 * kMiB));
}

TEST_F(MappedAndUnmappedHoles, AllocateMappingMapsNothingWhenAMappedRangeHoldsTheBlock) {
  CUresult e = CUDA_SUCCESS;
  std::optional<uintptr_t> a = r_.allocate_mapping(8 * kMiB, Reservation::kNoBudget, &e);
  ASSERT_TRUE(a) << e;
  EXPECT_EQ(base_ + 16 * kMiB, *a);
  EXPECT_EQ(mapped_before_, r_.map().granules_mapped_total());
  // The rest of the mapped range, [24, 32), then the unmapped best fit.
  std::optional<uintptr_t> b = r_.allocate_mapping(8 * kMiB, Reservation::kNoBudget, &e);
  ASSERT_TRUE(b) << e;
  EXPECT_EQ(base_ + 24 * kMiB, *b);
  EXPECT_EQ(mapped_before_, r_.map().granules_mapped_total());
  std::optional<uintptr_t> c = r_.allocate_mapping(8 * kMiB, Reservation::kNoBudget, &e);
  ASSERT_TRUE(c) << e;
  EXPECT_EQ(base_ + 4 * kMiB, *c);
  EXPECT_EQ(mapped_before_ + 4, r_.map().granules_mapped_total());
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack
