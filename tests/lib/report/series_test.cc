#include "report/series.h"

#include <gtest/gtest.h>

#include "health/device_health.h"
#include "report/summary.h"

namespace gpuslack {
namespace report {
namespace {

timeline::DeviceTimeline device_with_idle(int device, double end_s) {
  timeline::DeviceTimeline d;
  d.device = device;
  d.series_end_s = end_s;
  return d;
}

TEST(Series, GpuIdleShareFromTheTimelinePerSecond) {
  RunInfo run;
  run.gpu_timeline.status = timeline::Status::kMeasured;
  timeline::DeviceTimeline d = device_with_idle(0, 3.5);
  d.idle_series.add_span(0.0, 0.25);
  d.idle_series.add_span(1.0, 2.0);
  run.gpu_timeline.devices.push_back(d);
  SeriesSection s = build_series(run);
  EXPECT_DOUBLE_EQ(s.interval_s, 1.0);
  EXPECT_DOUBLE_EQ(s.t0_s, 0.0);
  ASSERT_EQ(s.devices.size(), 1u);
  // Bucket 2 had no idle (busy), bucket 3 measured half a second.
  EXPECT_EQ(s.devices[0].gpu_idle_share, (std::vector<double>{0.25, 1.0, 0.0, 0.0}));
  EXPECT_TRUE(s.devices[0].memory_used_bytes.empty());  // no NVML
  EXPECT_TRUE(s.reserved_bytes.empty());                // allocator:native
}

TEST(Series, NoIdleSeriesWhenTheTimelineDidNotMeasure) {
  RunInfo run;
  run.gpu_timeline.status = timeline::Status::kUnavailable;
  run.gpu_timeline.devices.push_back(device_with_idle(0, 3.5));
  EXPECT_TRUE(build_series(run).devices.empty());
}

TEST(Series, EverySourceIsBroughtToTheWidestWidth) {
  RunInfo run;
  run.gpu_timeline.status = timeline::Status::kMeasured;
  timeline::DeviceTimeline d = device_with_idle(1, 600);  // a 600 s run: 4 s buckets
  d.idle_series.add_span(0, 2);
  d.idle_series.add_span(596, 600);
  run.gpu_timeline.devices.push_back(d);
  health::DeviceAggregate a;
  for (int t = 0; t < 100; ++t) {  // NVML for the first 100 s only: 1 s buckets
    health::Reading r;
    r.t_s = t + 0.5;
    r.has_clock = true;
    r.sm_mhz = t < 50 ? 2000 : 1000;
    r.sm_max_mhz = 2000;
    r.has_memory = true;
    r.memory_used_bytes = 1000 + t;
    a.add(r);
  }
  run.device_health.status = health::Status::kMeasured;
  run.device_health.devices.push_back(a.row(1, "", ""));
  SeriesSection s = build_series(run);
  EXPECT_DOUBLE_EQ(s.interval_s, 4.0);
  ASSERT_EQ(s.devices.size(), 1u);
  const SeriesDevice& row = s.devices[0];
  EXPECT_EQ(row.device, 1);
  ASSERT_EQ(row.gpu_idle_share.size(), 150u);
  EXPECT_DOUBLE_EQ(row.gpu_idle_share[0], 0.5);
  EXPECT_DOUBLE_EQ(row.gpu_idle_share[149], 1.0);
  ASSERT_EQ(row.sm_clock_ratio.size(), 25u);
  EXPECT_DOUBLE_EQ(row.sm_clock_ratio[0], 1.0);
  EXPECT_DOUBLE_EQ(row.sm_clock_ratio[24], 0.5);
  ASSERT_EQ(row.memory_used_bytes.size(), 25u);
  EXPECT_DOUBLE_EQ(row.memory_used_bytes[0], 1003.0);  // the last of [0, 4)
}

TEST(Series, AllocatorSamplesAreBucketedFromTheOriginAndSummedOverDevices) {
  RunInfo run;
  run.tick_seconds = 1e-3;       // a tick a millisecond
  run.series_origin_ticks = 1000;
  for (int device = 0; device < 2; ++device) {
    AllocatorRun row;
    row.device = device;
    row.timeline.origin_ticks = 3000;  // made 2 s after the origin
    row.timeline.t_s = {0.0, 0.5, 1.2};
    row.timeline.reserved = {100, 300, 200};
    row.timeline.allocated = {50, 60, 70};
    run.allocator.push_back(row);
  }
  SeriesSection s = build_series(run);
  // Buckets 0 and 1: before the allocator; 2: the highest of 100 and 300.
  EXPECT_EQ(s.reserved_bytes, (std::vector<double>{0, 0, 600, 400}));
  EXPECT_EQ(s.allocated_bytes, (std::vector<double>{0, 0, 120, 140}));
}

}  // namespace
}  // namespace report
}  // namespace gpuslack
