#include "base/time_buckets.h"

#include <gtest/gtest.h>

namespace gpuslack {
namespace {

TEST(TimeBuckets, OneSecondBucketsUntilTheyFill) {
  TimeBuckets b(TimeBuckets::Reduce::kMean);
  b.add(0.5, 1.0);
  b.add(0.7, 3.0);
  b.add(2.2, 5.0);
  EXPECT_DOUBLE_EQ(b.interval_s(), 1.0);
  ASSERT_EQ(b.size(), 3);
  EXPECT_DOUBLE_EQ(b.value(0), 2.0);
  EXPECT_DOUBLE_EQ(b.value(1), 0.0);  // nothing reached it
  EXPECT_DOUBLE_EQ(b.value(2), 5.0);
}

TEST(TimeBuckets, DoublesTheWidthPastTheLastBucketAndStaysBounded) {
  TimeBuckets mean(TimeBuckets::Reduce::kMean), last(TimeBuckets::Reduce::kLast), max(TimeBuckets::Reduce::kMax);
  // One value a second for 1,000 s: 240 buckets of 1 s, then 2 s (480 s), 4 s
  // (960 s), 8 s.
  for (int t = 0; t < 1000; ++t) {
    mean.add(t + 0.5, t);
    last.add(t + 0.5, t);
    max.add(t + 0.5, t % 7 == 0 ? 1000.0 + t : t);
  }
  EXPECT_DOUBLE_EQ(mean.interval_s(), 8.0);
  EXPECT_LE(mean.size(), TimeBuckets::kMaxBuckets);
  EXPECT_EQ(mean.size(), 125);  // ceil(1000 / 8)
  // Bucket 0 covers [0, 8): the mean of 0..7, the last is 7.
  EXPECT_DOUBLE_EQ(mean.value(0), 3.5);
  EXPECT_DOUBLE_EQ(last.value(0), 7.0);
  EXPECT_DOUBLE_EQ(max.value(0), 1007.0);  // t = 7
  EXPECT_DOUBLE_EQ(mean.value(124), (992.0 + 999.0) / 2);
  EXPECT_DOUBLE_EQ(last.value(124), 999.0);
}

TEST(TimeBuckets, ExactlyTheLastBucketDoesNotWiden) {
  TimeBuckets b(TimeBuckets::Reduce::kLast);
  b.add(239.9, 1);
  EXPECT_DOUBLE_EQ(b.interval_s(), 1.0);
  EXPECT_EQ(b.size(), 240);
  b.add(240.0, 2);
  EXPECT_DOUBLE_EQ(b.interval_s(), 2.0);
  EXPECT_EQ(b.size(), 121);
  EXPECT_DOUBLE_EQ(b.value(119), 1);
  EXPECT_DOUBLE_EQ(b.value(120), 2);
}

TEST(TimeBuckets, SpansSplitAcrossBucketsAndGiveShares) {
  TimeBuckets idle(TimeBuckets::Reduce::kSum);
  idle.add_span(0.5, 2.25);  // 0.5 in [0,1), 1 in [1,2), 0.25 in [2,3)
  std::vector<double> s = idle.shares(2.5);  // the window ends at 2.5 s
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0], 0.5);
  EXPECT_DOUBLE_EQ(s[1], 1.0);
  EXPECT_DOUBLE_EQ(s[2], 0.5);  // 0.25 of the 0.5 s measured
}

TEST(TimeBuckets, ASpanPastTheEndWidensFirstAndKeepsItsTotal) {
  TimeBuckets idle(TimeBuckets::Reduce::kSum);
  idle.add_span(100, 110);
  idle.add_span(230, 250);  // past 240: widens to 2 s before adding
  EXPECT_DOUBLE_EQ(idle.interval_s(), 2.0);
  double total = 0;
  for (double v : idle.values()) total += v;
  EXPECT_NEAR(total, 30.0, 1e-9);
  EXPECT_DOUBLE_EQ(idle.value(50), 2.0);   // [100, 102)
  EXPECT_DOUBLE_EQ(idle.value(124), 2.0);  // [248, 250)
}

TEST(TimeBuckets, WidenToAlignsTwoSeries) {
  TimeBuckets a(TimeBuckets::Reduce::kMean), b(TimeBuckets::Reduce::kMean);
  for (int t = 0; t < 600; ++t) a.add(t, 1.0);  // widens to 4 s
  for (int t = 0; t < 100; ++t) b.add(t, 2.0);  // stays at 1 s
  b.widen_to(a.interval_s());
  EXPECT_DOUBLE_EQ(b.interval_s(), 4.0);
  EXPECT_EQ(b.size(), 25);
  EXPECT_DOUBLE_EQ(b.value(0), 2.0);
}

TEST(TimeBuckets, NegativeAndNanTimesGoToTheFirstBucket) {
  TimeBuckets b(TimeBuckets::Reduce::kSum);
  b.add(-3, 1);
  b.add(0.0 / 0.0, 1);
  b.add_span(-2, -1);  // entirely before the origin: nothing
  EXPECT_EQ(b.size(), 1);
  EXPECT_DOUBLE_EQ(b.value(0), 2);
}

}  // namespace
}  // namespace gpuslack
