#include "alloc/range_set.h"

#include <gtest/gtest.h>

namespace gpuslack {
namespace alloc {
namespace {

TEST(RangeSet, InsertCoalescesWithBothNeighbours) {
  RangeSet s;
  ASSERT_TRUE(s.insert(0, 100));
  ASSERT_TRUE(s.insert(200, 100));
  EXPECT_EQ(2u, s.count());
  ASSERT_TRUE(s.insert(100, 100));  // bridges the two
  EXPECT_EQ(1u, s.count());
  EXPECT_EQ(300u, s.largest());
  EXPECT_EQ("", s.check());
}

TEST(RangeSet, RefusesOverlapsAndEmptyRanges) {
  RangeSet s;
  ASSERT_TRUE(s.insert(100, 100));
  EXPECT_FALSE(s.insert(150, 10));
  EXPECT_FALSE(s.insert(50, 60));
  EXPECT_FALSE(s.insert(199, 5));
  EXPECT_FALSE(s.insert(300, 0));
  EXPECT_EQ(100u, s.total());
  EXPECT_EQ("", s.check());
}

TEST(RangeSet, BestFitTakesTheSmallestThenLowest) {
  RangeSet s;
  s.insert(0, 1000);
  s.insert(2000, 300);
  s.insert(3000, 300);
  s.insert(4000, 500);
  EXPECT_EQ(2000u, s.take_best_fit(300));  // exact, lowest address
  EXPECT_EQ(4000u, s.take_best_fit(400));  // 500 beats 1000
  EXPECT_EQ(4400u, s.take_best_fit(1));    // what is left of the 500 is now smallest
  EXPECT_FALSE(s.take_best_fit(1001));
  EXPECT_EQ("", s.check());
}

TEST(RangeSet, TakeSplitsARangeInThree) {
  RangeSet s;
  s.insert(0, 1000);
  ASSERT_TRUE(s.take(400, 200));
  EXPECT_EQ(2u, s.count());
  EXPECT_EQ(800u, s.total());
  EXPECT_FALSE(s.take(500, 10));   // no longer free
  EXPECT_FALSE(s.take(300, 200));  // runs past its range
  ASSERT_TRUE(s.insert(400, 200));
  EXPECT_EQ(1u, s.count());
  EXPECT_EQ("", s.check());
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack
