// The GPU-timeline rules (lib/findings/timeline_rules.cc) over built
// summaries: each fires on its idle cause and stays quiet on a near miss.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "findings/findings.h"

namespace gpuslack {
namespace findings {
namespace {

using timeline::Idle;

// A 10 s run whose one device was measured for 10 s: `idle` seconds charged
// to `cause`, the rest busy computing.
report::Summary measured(Idle cause, double idle) {
  report::Summary s;
  s.wall_s = 10;
  s.gpu_timeline.status = timeline::Status::kMeasured;
  report::GpuDeviceRow d;
  d.device = 0;
  d.wall_s = 10;
  d.idle_s = idle;
  d.idle_by[static_cast<int>(cause)] = idle;
  d.busy_s = 10 - idle;
  d.busy_by[static_cast<int>(timeline::Busy::kCompute)] = d.busy_s;
  d.kernels = 200000;
  d.short_kernel_busy_s = 0.9 * d.busy_s;
  d.steps.count = 100;
  d.steps.busy_share_p50 = d.busy_s / 10;
  s.gpu_timeline.devices.push_back(d);
  return s;
}

std::vector<report::Finding> run(const report::Summary& s, bool pytorch = false) {
  std::vector<report::Finding> out;
  Context c;
  c.pytorch = pytorch;
  IdleLedger idle(s);
  timeline_rules(s, c, &idle, &out);
  return out;
}

const report::Finding* find(const std::vector<report::Finding>& v, const std::string& rule) {
  auto it = std::find_if(v.begin(), v.end(), [&](const report::Finding& f) { return f.rule == rule; });
  return it == v.end() ? nullptr : &*it;
}

TEST(HostBound, FiresWhenTheGpuWaitsForTheHost) {
  auto out = run(measured(Idle::kHostBound, 4), /*pytorch=*/true);
  ASSERT_EQ(1u, out.size());
  const report::Finding& f = out[0];
  EXPECT_EQ("host_bound", f.rule);
  EXPECT_DOUBLE_EQ(4, f.cost_s);
  EXPECT_DOUBLE_EQ(4, f.gpu_idle_s);
  EXPECT_DOUBLE_EQ(0.4, f.cost_share);
  EXPECT_NE(std::string::npos, f.fix.find("num_workers")) << f.fix;
  EXPECT_NE(std::string::npos, f.fix.find("prefetch_factor")) << f.fix;
  EXPECT_NE(std::string::npos, f.fix.find("pin_memory")) << f.fix;
  bool idle_line = false;
  for (const auto& [name, value] : f.evidence)
    if (name == "GPU idle, host_bound") idle_line = value.find("4.000 s of 10.000 s") != std::string::npos;
  EXPECT_TRUE(idle_line);
}

TEST(HostBound, WithoutPyTorchTheFixNamesNoPyTorchKnob) {
  auto out = run(measured(Idle::kHostBound, 4));
  ASSERT_EQ(1u, out.size());
  EXPECT_EQ(std::string::npos, out[0].fix.find("num_workers")) << out[0].fix;
}

TEST(HostBound, NearMissBelowTheShareIsQuiet) {
  EXPECT_TRUE(run(measured(Idle::kHostBound, 0.9)).empty());  // 9% of the window
}

TEST(HostBound, IdleChargedToBlockingCallsIsNotHostBound) {
  EXPECT_TRUE(run(measured(Idle::kAllocation, 5)).empty());
  EXPECT_TRUE(run(measured(Idle::kSync, 5)).empty());
}

TEST(HostBound, IdleBeforeTheLoopIsNotSteadyState) {
  report::Summary s = measured(Idle::kHostBound, 4);
  report::GpuDeviceRow& d = s.gpu_timeline.devices[0];
  d.steps.from_marks = true;
  d.steps.busy_share_p50 = 0.95;  // the marked steps kept the GPU busy
  EXPECT_TRUE(run(s).empty());
  d.steps.busy_share_p50 = 0.6;
  EXPECT_EQ(1u, run(s).size());
  d.steps.busy_share_p50 = 0.95;
  d.steps.count = 2;  // too few steps to judge
  EXPECT_EQ(1u, run(s).size());
}

TEST(HostBound, NothingWhenTheTimelineDidNotMeasure) {
  report::Summary s = measured(Idle::kHostBound, 5);
  for (auto st : {timeline::Status::kOff, timeline::Status::kHeldByOther, timeline::Status::kUnavailable,
                  timeline::Status::kNotStarted}) {
    s.gpu_timeline.status = st;
    EXPECT_TRUE(run(s).empty());
  }
}

TEST(HostBound, TheDeviceThatIdledMostIsTheCost) {
  report::Summary s = measured(Idle::kHostBound, 2);
  report::GpuDeviceRow d = s.gpu_timeline.devices[0];
  d.device = 1;
  d.idle_by[static_cast<int>(Idle::kHostBound)] = 3;
  s.gpu_timeline.devices.push_back(d);
  auto out = run(s);
  ASSERT_EQ(1u, out.size());
  EXPECT_DOUBLE_EQ(3, out[0].cost_s);
  EXPECT_EQ("1", out[0].evidence[0].second);
}

TEST(LaunchBound, FiresOnGapsBetweenLaunches) {
  auto out = run(measured(Idle::kLaunchBound, 3), /*pytorch=*/true);
  ASSERT_EQ(1u, out.size());
  const report::Finding& f = out[0];
  EXPECT_EQ("launch_bound", f.rule);
  EXPECT_DOUBLE_EQ(3, f.cost_s);
  EXPECT_DOUBLE_EQ(3, f.gpu_idle_s);
  EXPECT_NE(std::string::npos, f.fix.find("torch.compile")) << f.fix;
  EXPECT_NE(std::string::npos, f.fix.find("reduce-overhead")) << f.fix;
  EXPECT_NE(nullptr, find(out, "launch_bound"));
  bool kernels = false;
  for (const auto& [name, value] : f.evidence)
    if (name == "kernels") kernels = value.find("200000, 35.0 us each") != std::string::npos;
  EXPECT_TRUE(kernels);
  EXPECT_NE(std::string::npos, run(measured(Idle::kLaunchBound, 3))[0].fix.find("CUDA graph"));
}

TEST(LaunchBound, NearMissIsQuiet) {
  EXPECT_TRUE(run(measured(Idle::kLaunchBound, 0.5)).empty());
  EXPECT_TRUE(run(measured(Idle::kHostBound, 0.5)).empty());
}

TEST(TimelineRules, BothFireWhenBothLeak) {
  report::Summary s = measured(Idle::kHostBound, 2);
  s.gpu_timeline.devices[0].idle_by[static_cast<int>(Idle::kLaunchBound)] = 1.5;
  auto out = evaluate(s, Context{});
  ASSERT_NE(nullptr, find(out, "host_bound"));
  ASSERT_NE(nullptr, find(out, "launch_bound"));
  EXPECT_EQ("host_bound", out[0].rule);  // most costly first
}

}  // namespace
}  // namespace findings
}  // namespace gpuslack
