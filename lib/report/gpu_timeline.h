// The summary's GPU timeline section ("gpu_timeline"): whether the
// timeline measured, and per device what the GPU was busy with and why it
// idled (timeline/timeline.h, Note [Why the GPU idled]), each idle call
// site symbolized and the top `top_call_sites` of them kept. Its
// report-side types, its builder and its text; the JSON is
// gpu_timeline_json.h's.
//
// The kernels' and steps' figures are the report's own types, copied
// field by field from the timeline's (timeline::KernelRow, KernelLaunches,
// KernelShapeRow, Steps, StepRow) by the builder, as the other features'
// counters are (Note [Counters copied at the boundary] in
// report/feature_counters.h): the timeline may change its structs without
// changing the file. The status and the busy and idle kinds stay the
// timeline's enums, written by their keys (timeline::status_key, busy_key,
// idle_key), which are the file's names.
//
// Text: gpu_timeline_headline() the first lines when it measured, one per
// device; gpu_timeline_text() the full text's block (busy, idle call sites,
// top kernels, steps, drops) or why it did not measure.
//
// Thread safety: plain data; the builder is report time only (symbolizing
// takes the loader's lock); the text is pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ledger/api_call.h"
#include "timeline/timeline.h"

namespace gpuslack {
namespace report {

// One launch shape of a kernel (timeline/occupancy.h), with the figures
// the device's limits give it (0 where they are unknown).
struct KernelShapeRow {
  uint64_t blocks = 0;
  uint32_t threads_per_block = 0;
  uint32_t registers_per_thread = 0;
  uint32_t shared_bytes_per_block = 0;  // static + dynamic
  int blocks_per_sm = 0;                // theoretical (0: unknown, or the block cannot launch)
  double waves = 0;
  double wave_efficiency = 0;           // (0, 1]; 0: unknown
  uint64_t count = 0;
  double total_s = 0;
};

// How a kernel's launches filled the GPU (Note [Waves] in
// timeline/occupancy.h), over the launches whose records carry a grid.
struct KernelLaunches {
  int sm_count = 0;           // the device's SMs; 0: its limits are unknown (then no blocks_per_sm, waves)
  uint64_t shapes = 0;        // distinct shapes seen
  uint64_t blocks_min = 0, blocks_max = 0;
  int blocks_per_sm_min = 0, blocks_per_sm_max = 0;
  double waves_min = 0, waves_max = 0;
  double wave_efficiency = 0;      // weighted by GPU time over the shaped launches; 0: unknown
  double wave_efficiency_min = 0;
  double shaped_s = 0;             // GPU time of the launches these figures cover
  double below_sms_s = 0;          // GPU time in launches with fewer blocks than SMs
  // Launches that leave SMs idle (timeline::kUnderfilledEfficiency): their
  // GPU time, and the SM time their partial waves left idle.
  double underfilled_s = 0;
  double underfilled_idle_s = 0;
  std::vector<KernelShapeRow> top_shapes;  // most GPU time first, a few
};

struct KernelRow {
  std::string name;  // as CUPTI gives it, demangled
  uint64_t count = 0;
  double total_s = 0;
  double mean_s = 0;
  KernelLaunches launches;  // shapes == 0: no record carried a grid
};

// Busy and idle of one step (between two step marks) or interval.
struct StepRow {
  uint64_t index = 0;  // step number, from 0
  double wall_s = 0;
  double busy_s = 0;
  double idle_s = 0;
};

struct Steps {
  bool from_marks = false;  // true: program-marked steps; false: summary intervals
  uint64_t count = 0;
  double busy_share_p50 = 0, busy_share_p99 = 0;  // over steps (p99: the low tail, 1st percentile of busy)
  double wall_p50_s = 0, wall_p99_s = 0;
  std::vector<StepRow> worst;  // most idle first, a few
};

// Idle time of one device charged to one hooked call at one call site
// (timeline/timeline.h, Note [Why the GPU idled]).
struct IdleSiteRow {
  std::string cause;                // idle_key(): "allocation", "copies", ...
  std::string api;                  // the hooked call
  double idle_s = 0;
  std::vector<std::string> frames;  // symbolized, innermost first, gpuslack's own dropped
};

// One device's GPU busy and idle time, as timeline::DeviceTimeline with the
// call sites symbolized.
struct GpuDeviceRow {
  int device = 0;
  double wall_s = 0;
  double busy_s = 0;
  double busy_by[timeline::kBusyCount] = {};
  double idle_s = 0;
  double idle_by[timeline::kIdleCount] = {};
  std::vector<IdleSiteRow> idle_sites;  // most idle first, top_call_sites of them
  std::vector<KernelRow> top_kernels;
  double short_kernel_busy_s = 0;
  uint64_t kernels = 0;
  uint64_t launches = 0;
  Steps steps;
};

// In the text, the first line when it measured.
struct GpuTimelineSection {
  timeline::Status status = timeline::Status::kNotStarted;
  std::string detail;         // the tool holding CUPTI, or why it is unavailable
  std::string how_to_enable;  // when gpu_timeline:auto did not measure
  std::string stopped_by;     // a tool that took CUPTI from gpuslack mid-run; "" if none
  double stopped_after_s = 0; // when, from the timeline's start
  std::vector<GpuDeviceRow> devices;
  uint64_t records = 0;
  uint64_t dropped_by_pool = 0;
  uint64_t buffers_beyond_cap = 0;  // lent past the pool's ceiling: this CUPTI crashes on a refusal
  uint64_t dropped_by_cupti = 0;
  uint64_t host_intervals_dropped = 0;
  uint64_t buffer_bytes_limit = 0;
  uint64_t buffer_bytes_peak = 0;
};

GpuTimelineSection build_gpu_timeline(const timeline::Snapshot& snapshot, int top_call_sites);

// The copies at the boundary.
KernelRow kernel_row(const timeline::KernelRow& k);
Steps steps_of(const timeline::Steps& s);

// The idle cause an IdleSiteRow's call falls under (its category's).
timeline::Idle idle_cause_of(Category category);

// Measured, with at least one device.
bool gpu_timeline_measured(const GpuTimelineSection& g);
void gpu_timeline_headline(const GpuTimelineSection& g, std::string* out);
void gpu_timeline_text(const GpuTimelineSection& g, std::string* out);

}  // namespace report
}  // namespace gpuslack
