// CallRow::steady_s (report/summary.h): the time of the slow calls that
// began in the middle 80% of the run, merged over threads (and exited threads), counting only
// time buckets wholly inside, less the costliest of them; the figure behind
// the findings' "steady state".
#include <gtest/gtest.h>

#include "ledger/exited_threads.h"
#include "report/summary.h"

namespace gpuslack {
namespace report {
namespace {

const ApiCall kFree{1, "cudaFree", Category::kAllocation};

ledger::ThreadFigures thread_with(double begin_s, double end_s) {
  ledger::ThreadFigures t;
  ledger::CallFigures c;
  c.call = &kFree;
  c.count = 1;
  c.ticks = static_cast<uint64_t>((end_s - begin_s) * 1e9);
  c.max_ticks = c.ticks;
  auto slow = std::make_shared<TimeBuckets>(TimeBuckets::Reduce::kSum, ledger::kSlowTimeInterval);
  slow->add(begin_s, end_s - begin_s);
  c.slow_time = slow;
  t.calls.push_back(c);
  return t;
}

RunInfo run_of(double wall_s) {
  RunInfo run;
  run.wall_s = wall_s;
  run.tick_seconds = 1e-9;
  return run;
}

TEST(SteadyState, TimeInTheMiddleOfTheRunCountsLessItsCostliestBucket) {
  Summary s = build_summary({thread_with(4.0, 4.5), thread_with(5.0, 5.25), thread_with(6.0, 6.2)}, run_of(10));
  ASSERT_EQ(1u, s.calls.size());
  EXPECT_NEAR(0.45, s.calls[0].steady_s, 1e-9);
  EXPECT_NEAR(0.95, s.calls[0].total_s, 1e-6);
}

TEST(SteadyState, OneEventMidRunCountsNothing) {
  // The last wait for queued work: one long call, in the middle.
  Summary s = build_summary({thread_with(5.0, 8.0)}, run_of(10));
  EXPECT_NEAR(0.0, s.calls[0].steady_s, 1e-9);
}

TEST(SteadyState, TimeAtStartUpAndTeardownDoesNot) {
  // 10 s: the first second and the last are left out.
  Summary s = build_summary({thread_with(0.0, 0.95), thread_with(9.05, 10.0)}, run_of(10));
  ASSERT_EQ(1u, s.calls.size());
  EXPECT_NEAR(0.0, s.calls[0].steady_s, 1e-9);
  EXPECT_GT(s.calls[0].total_s, 1.8);
  // A long call that began before the window counts nowhere in it.
  Summary edge = build_summary({thread_with(0.9, 2.5)}, run_of(10));
  EXPECT_NEAR(0.0, edge.calls[0].steady_s, 1e-9);
  // One that began in a bucket wholly inside counts whole (beside another).
  Summary inside = build_summary({thread_with(1.0, 2.5), thread_with(5.0, 5.1)}, run_of(10));
  EXPECT_NEAR(0.1, inside.calls[0].steady_s, 1e-9);  // 1.5 s + 0.1 s less the costliest bucket
}

TEST(SteadyState, ExitedThreadsKeepTheirSpans) {
  ledger::ExitedThreads exited;
  exited.add(thread_with(4.0, 4.5));
  exited.add(thread_with(6.0, 6.5));
  exited.add(thread_with(7.0, 7.5));
  std::vector<ledger::ThreadFigures> threads;
  exited.append_to(&threads);
  Summary s = build_summary(threads, run_of(10));
  ASSERT_EQ(1u, s.calls.size());
  EXPECT_NEAR(1.0, s.calls[0].steady_s, 1e-9);
}

TEST(SteadyState, BucketsOfTwoWidthsMerge) {
  TimeBuckets a(TimeBuckets::Reduce::kSum, 0.25), b(TimeBuckets::Reduce::kSum, 0.25);
  a.add_span(1.0, 1.5);
  b.add_span(100.0, 100.5);  // widened: 240 buckets of 0.25 s end at 60 s
  ASSERT_GT(b.interval_s(), a.interval_s());
  a.merge(b);
  EXPECT_EQ(b.interval_s(), a.interval_s());
  double total = 0;
  for (double v : a.values()) total += v;
  EXPECT_NEAR(1.0, total, 1e-9);
}

}  // namespace
}  // namespace report
}  // namespace gpuslack
