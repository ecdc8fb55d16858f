// Busy and idle per step: the tracker's cuts at boundaries, the table's
// percentiles and worst steps (timeline/step_table.h), and steps through
// TimelineAnalysis, from marks and from summary intervals.
#include "timeline/step_table.h"

#include <gtest/gtest.h>

#include <vector>

#include "analysis_fixture.h"
#include "timeline/timeline_analysis.h"

namespace gpuslack {
namespace timeline {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers

TEST(StepTable, PercentilesAreNearestRankAndWorstIsMostIdleFirst) {
  StepTable t(3);
  // 100 steps: step i has wall 100 + i and idle i (busy share falls with i).
  for (uint64_t i = 0; i < 100; ++i) t.record(i, 100 + i, i);
  Steps s;
  t.fill(1.0, &s);
  EXPECT_EQ(100u, s.count);
  EXPECT_DOUBLE_EQ(149, s.wall_p50_s);  // the 50th of 100..199
  EXPECT_DOUBLE_EQ(198, s.wall_p99_s);  // the 99th
  // Busy shares sorted ascending: step 99 first (100/199); p50 is the
  // 50th, step 50's (100/150); the 1st percentile is the least, step 99's.
  EXPECT_DOUBLE_EQ(100.0 / 150, s.busy_share_p50);
  EXPECT_DOUBLE_EQ(100.0 / 199, s.busy_share_p99);
  ASSERT_EQ(3u, s.worst.size());
  EXPECT_EQ(99u, s.worst[0].index);
  EXPECT_EQ(98u, s.worst[1].index);
  EXPECT_EQ(97u, s.worst[2].index);
  EXPECT_DOUBLE_EQ(99, s.worst[0].idle_s);
  EXPECT_DOUBLE_EQ(100, s.worst[0].busy_s);
  EXPECT_DOUBLE_EQ(199, s.worst[0].wall_s);
}

TEST(StepTable, TiesKeepTheEarlierStepAndZeroWallHasNoShare) {
  StepTable t(2);
  t.record(0, 10, 5);
  t.record(1, 10, 5);
  t.record(2, 10, 5);
  t.record(3, 0, 0);
  Steps s;
  t.fill(1.0, &s);
  ASSERT_EQ(2u, s.worst.size());
  EXPECT_EQ(0u, s.worst[0].index);
  EXPECT_EQ(1u, s.worst[1].index);
  EXPECT_DOUBLE_EQ(0.5, s.busy_share_p50);  // the zero-wall step left out
  EXPECT_DOUBLE_EQ(10, s.wall_p50_s);       // 0, 10, 10, 10: the 2nd
}

TEST(StepTable, ManyStepsKeepABoundedSample) {
  StepTable t(1);
  const uint64_t n = 3 * StepTable::kSampleSize;
  for (uint64_t i = 0; i < n; ++i) t.record(i, 1000, i % 1000);  // busy share uniform in (0, 1]
  Steps s;
  t.fill(1.0, &s);
  EXPECT_EQ(n, s.count);
  EXPECT_NEAR(0.5, s.busy_share_p50, 0.02);
  EXPECT_NEAR(0.01, s.busy_share_p99, 0.01);
  ASSERT_EQ(1u, s.worst.size());
  EXPECT_EQ(999u, s.worst[0].index);  // the first step with idle 999
}

TEST(StepTracker, CutsIdleAtBoundaries) {
  StepTracker marks(0, /*open_at_start=*/false, 0, 10);
  marks.add_boundary(100, 0);
  marks.add_boundary(300, 1);
  marks.add_boundary(200, 5);  // out of order: put in its place
  marks.charge_idle(50, 150);  // 50 before the first step: not in a step
  marks.charge_idle(250, 350);
  marks.walk_to(1000);
  Steps s;
  marks.table().fill(1.0, &s);
  ASSERT_EQ(2u, s.count);  // 100..200 and 200..300; the step from 300 is open
  ASSERT_EQ(2u, s.worst.size());
  EXPECT_EQ(0u, s.worst[0].index);  // idle 50 (100..150), ties: earlier first
  EXPECT_DOUBLE_EQ(50, s.worst[0].idle_s);
  EXPECT_EQ(5u, s.worst[1].index);
  EXPECT_DOUBLE_EQ(50, s.worst[1].idle_s);
  EXPECT_FALSE(marks.add_boundary(900, 9));  // behind the walk: dropped
  EXPECT_EQ(1u, marks.boundaries_dropped());
}

TEST(TimelineAnalysisSteps, StepsFromMarks) {
  TimelineAnalysis a(small_options());
  // Marks at 0, 100, 300, 350, 1000: steps 0..3.
  for (uint64_t m : {0, 100, 300, 350, 1000}) a.add_step(m);
  a.add(gpu(0, 80));     // step 0: idle 20
  a.add(gpu(100, 150));  // step 1: idle 150
  a.add(gpu(300, 350));  // step 2: idle 0
  a.add(gpu(350, 950));  // step 3: idle 50
  a.commit(1200);
  const DeviceTimeline d = fill(a, 1200)[0];
  EXPECT_TRUE(d.steps.from_marks);
  EXPECT_EQ(4u, d.steps.count);
  ASSERT_EQ(4u, d.steps.worst.size());
  EXPECT_EQ(1u, d.steps.worst[0].index);
  EXPECT_DOUBLE_EQ(150, ticks(d.steps.worst[0].idle_s));
  EXPECT_DOUBLE_EQ(50, ticks(d.steps.worst[0].busy_s));
  EXPECT_EQ(3u, d.steps.worst[1].index);
  EXPECT_EQ(0u, d.steps.worst[2].index);
  EXPECT_EQ(2u, d.steps.worst[3].index);
  // Walls 100, 200, 50, 650: p50 is the 2nd, p99 the 4th.
  EXPECT_DOUBLE_EQ(100, ticks(d.steps.wall_p50_s));
  EXPECT_DOUBLE_EQ(650, ticks(d.steps.wall_p99_s));
  // Busy shares 0.25, 0.8, 0.923, 1: p50 the 2nd, the 1st percentile the least.
  EXPECT_DOUBLE_EQ(0.8, d.steps.busy_share_p50);
  EXPECT_DOUBLE_EQ(0.25, d.steps.busy_share_p99);
}

TEST(TimelineAnalysisSteps, MarksAcrossCommitsAndDevicesSeenLater) {
  TimelineAnalysis a(small_options());
  a.add_step(100);
  a.add(gpu(0, 150, Busy::kCompute, nullptr, 0));
  a.commit(200);
  a.add_step(300);
  a.add(gpu(250, 400, Busy::kCompute, nullptr, 1));  // device 1, window from 200
  a.add_step(500);
  a.commit(600);
  const auto out = fill(a, 600);
  ASSERT_EQ(2u, out.size());
  EXPECT_EQ(2u, out[0].steps.count);  // 100..300, 300..500
  EXPECT_EQ(1u, out[1].steps.count);  // 300..500 only
  EXPECT_EQ(1u, out[1].steps.worst.at(0).index);
  EXPECT_DOUBLE_EQ(100, ticks(out[1].steps.worst[0].idle_s));
}

TEST(TimelineAnalysisSteps, SummaryIntervalsWhenNoMarks) {
  TimelineAnalysis a(small_options());
  a.add(gpu(0, 100));
  a.add(gpu(200, 500));
  a.add_interval_boundary(400);  // the first snapshot
  DeviceTimeline d = fill(a, 400)[0];
  EXPECT_FALSE(d.steps.from_marks);
  EXPECT_EQ(1u, d.steps.count);
  EXPECT_DOUBLE_EQ(400, ticks(d.steps.wall_p50_s));
  EXPECT_DOUBLE_EQ(0.75, d.steps.busy_share_p50);
  a.commit(400);
  a.add_interval_boundary(1000);
  d = fill(a, 1000)[0];
  EXPECT_EQ(2u, d.steps.count);
  EXPECT_EQ(1u, d.steps.worst.at(0).index);  // 400..1000: idle 500
  EXPECT_DOUBLE_EQ(500, ticks(d.steps.worst[0].idle_s));
}

}  // namespace
}  // namespace timeline
}  // namespace gpuslack
