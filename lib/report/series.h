// The summary's series section ("series"): the figures over time that the
// job report charts (GPU idle by rank over time, memory over time), brought
// to one bucket width. Its report-side types and its builder (no text: the
// job report draws it); the JSON is series_json.h's.
//
// Each source keeps its own bounded buckets from the series' origin (the
// session's start, base/time_buckets.h): the GPU timeline's idle per device
// (timeline::DeviceTimeline::idle_series), NVML's memory used and clock
// ratio per device (health::DeviceHealth), and allocator:vmm's samples
// (alloc::Timeline, re-bucketed here: highest reserved and allocated per
// bucket on each device, summed over devices). All are widened to the
// widest width among them, so every array has at most 240 entries of one
// interval_s.
//
// Thread safety: plain data; the builder is pure.
#pragma once

#include <vector>

namespace gpuslack {
namespace report {

struct RunInfo;

// Figures over time, all in buckets of interval_s from t0_s after
// started_utc.
struct SeriesDevice {
  int device = 0;
  std::vector<double> gpu_idle_share;     // [] when the GPU timeline did not measure it
  std::vector<double> memory_used_bytes;  // NVML, end of each bucket; [] when unavailable
  std::vector<double> sm_clock_ratio;     // NVML, mean per bucket; [] when unavailable
};
struct SeriesSection {
  double interval_s = 1.0;
  double t0_s = 0;
  std::vector<SeriesDevice> devices;
  std::vector<double> reserved_bytes;   // allocator:vmm, all devices; [] when native
  std::vector<double> allocated_bytes;
};

SeriesSection build_series(const RunInfo& run);

}  // namespace report
}  // namespace gpuslack
