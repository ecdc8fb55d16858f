// What the timeline analysis tests share: hooked calls of each category,
// records and host intervals in small synthetic ticks (1 tick = 1 ns), and
// the sums every DeviceTimeline must satisfy.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ledger/api_call.h"
#include "ledger/host_activity.h"
#include "timeline/gpu_activity.h"
#include "timeline/timeline.h"
#include "timeline/timeline_analysis.h"

namespace gpuslack {
namespace timeline {
namespace testing {

inline const ApiCall kFree{1, "cudaFree", Category::kAllocation};
inline const ApiCall kMemcpy{2, "cudaMemcpy", Category::kCopy};
inline const ApiCall kAllReduce{3, "ncclAllReduce", Category::kCollective};
inline const ApiCall kSync{4, "cudaDeviceSynchronize", Category::kSync};
inline const ApiCall kQuery{5, "cudaStreamQuery", Category::kOther};
inline const ApiCall kMalloc{6, "cudaMalloc", Category::kAllocation};

inline constexpr double kTick = 1e-9;

inline GpuActivity gpu(uint64_t start, uint64_t end, Busy kind = Busy::kCompute, const char* name = nullptr,
                       int device = 0) {
  GpuActivity a;
  a.start_ticks = start;
  a.end_ticks = end;
  a.kind = kind;
  a.name = name;
  a.device = device;
  return a;
}

inline ledger::HostInterval host(uint64_t start, uint64_t end, const ApiCall& call, int tid = 1,
                                 uint64_t site = 0) {
  ledger::HostInterval h;
  h.start_ticks = start;
  h.end_ticks = end;
  h.call = &call;
  h.tid = tid;
  h.site_key = site;
  return h;
}

// Small thresholds for small numbers: gaps of <= 20 ticks are launch-bound,
// kernels of < 10 ticks are short.
inline AnalysisOptions small_options(uint64_t start = 0) {
  AnalysisOptions o;
  o.start_ticks = start;
  o.launch_bound_gap_ticks = 20;
  o.short_kernel_ticks = 10;
  return o;
}

inline double ticks(double seconds) { return seconds / kTick; }

// busy_by sums to busy, idle_by to idle, busy + idle to wall.
inline void expect_sums(const DeviceTimeline& d) {
  double busy = 0, idle = 0;
  for (double b : d.busy_by) busy += b;
  for (double i : d.idle_by) idle += i;
  EXPECT_NEAR(d.busy_s, busy, 1e-12 * (1 + d.wall_s));
  EXPECT_NEAR(d.idle_s, idle, 1e-12 * (1 + d.wall_s));
  EXPECT_NEAR(d.wall_s, d.busy_s + d.idle_s, 1e-12 * (1 + d.wall_s));
  EXPECT_LE(d.short_kernel_busy_s, d.busy_s + 1e-15);
}

inline std::vector<DeviceTimeline> fill(const TimelineAnalysis& a, uint64_t now,
                                        SiteFramesFn frames = nullptr) {
  std::vector<DeviceTimeline> out;
  a.fill(now, kTick, frames, &out);
  for (const DeviceTimeline& d : out) expect_sums(d);
  return out;
}

inline double busy_ticks(const DeviceTimeline& d, Busy b) { return ticks(d.busy_by[static_cast<int>(b)]); }
inline double idle_ticks(const DeviceTimeline& d, Idle i) { return ticks(d.idle_by[static_cast<int>(i)]); }

}  // namespace testing
}  // namespace timeline
}  // namespace gpuslack
