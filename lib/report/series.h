// The summary's "series" (summary.h, SeriesSection): the figures over time
// that the job report charts (GPU idle by rank over time, memory over time),
// brought to one bucket width.
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
// Thread safety: pure.
#pragma once

#include "report/summary.h"

namespace gpuslack {
namespace report {

SeriesSection build_series(const RunInfo& run);

}  // namespace report
}  // namespace gpuslack
