// The GPU timeline: what each device was busy with and, when it idled, why.
//
// Built on the CUPTI Activity API, loaded at run time (cuda/cupti_api.h):
// kernels (concurrent), memcpy and memset records give each device's busy
// intervals; the gaps between them are its idle time, attributed to what
// the host threads were doing meanwhile (ledger/host_activity.h):
//
// Note [Why the GPU idled]: an instant of a gap is charged, in this order,
// to
//   1. a hooked call in flight on some thread that blocked (its category:
//      allocation, copies, collectives, synchronization, other; with the
//      call and its call site when captured);
//   2. launches, when the gap is no longer than the launch-bound threshold
//      (the GPU ran out of work between launches);
//   3. otherwise the host: no CUDA call in flight at all (data loading,
//      Python, CPU work): host-bound.
// Busy time is compute kernels, NCCL kernels (communication), copies and
// memsets, overlaps counted once (a kernel overlapping a copy counts as
// compute).
//
// Coexistence (Note [One CUPTI, several tools]): CUPTI 13.2 and older allow
// one subscriber; a later CUPTI may allow several (cuptiSubscribe_v2 with
// allowMultipleSubscribers). gpuslack subscribes as one of several where
// allowed; where only one is, and another tool holds it, gpuslack steps
// aside (Status::kHeldByOther, `detail` names the tool); where it is free,
// gpuslack takes it, under gpu_timeline:auto too unless a tool was injected
// (CUDA_INJECTION64_PATH). A tool that subscribes after gpuslack and needs
// CUPTI to itself gets it: gpuslack yields (flushes, unsubscribes) before
// the tool's call goes through, and the snapshot says so (stopped_by,
// stopped_after_s); a tool that asks to be one of several runs beside it
// (timeline/coexistence.h).
//
// Activity buffers come from a bounded pool (gpu_timeline_buffer_mb) that
// grows with the buffers CUPTI holds per launching thread, up to 4x; past
// that, CUPTI's request gets no buffer and drops records, counted, never
// waited for (never refused on a CUPTI that crashes on it:
// timeline/activity_buffers.h, cupti_session.h). Completed buffers are
// processed on gpuslack's own worker thread, never on the application's.
//
// Thread safety: every function, any thread; start/stop/snapshot serialize
// among themselves.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/time_buckets.h"
#include "ledger/api_call.h"

namespace gpuslack {
namespace timeline {

enum class Status : uint8_t {
  kOff,          // gpu_timeline:off
  kNotStarted,   // no session yet, or not started
  kMeasured,     // CUPTI records flow
  kHeldByOther,  // another tool holds CUPTI, and CUPTI allows one subscriber
  kUnavailable,  // no libcupti found, or CUPTI refused (detail says why)
};
const char* status_key(Status s);  // "off", "not_started", "measured", "held_by_other", "unavailable"

// What a busy GPU was doing.
enum class Busy : uint8_t { kCompute, kCommunication, kCopies, kMemsets };
inline constexpr int kBusyCount = 4;
const char* busy_key(Busy b);  // "compute", "communication", "copies", "memsets"
// As a person reads it (the text summary, the job report): "compute", ...
const char* busy_name(Busy b);

// Why an idle GPU waited (Note [Why the GPU idled]).
enum class Idle : uint8_t {
  kHostBound,    // no CUDA call in flight
  kLaunchBound,  // short gaps between launches
  kAllocation,   // blocked in allocation calls
  kCopies,       // blocked in copies
  kCollectives,  // blocked in NCCL calls
  kSync,         // blocked in synchronization
  kOther,        // blocked in other hooked calls
};
inline constexpr int kIdleCount = 7;
const char* idle_key(Idle i);  // "host_bound", "launch_bound", "allocation", ...
// As a person reads it: "host-bound", "launch-bound", ..., "synchronization", "other calls".
const char* idle_name(Idle i);

// Idle time charged to one hooked call at one call site (frames empty when
// none was captured).
struct IdleSite {
  const ApiCall* call = nullptr;
  std::vector<void*> frames;  // innermost first, as captured
  double idle_s = 0;
};

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

// How a kernel's launches filled the GPU (Note [Waves] in occupancy.h),
// over the launches whose records carry a grid; distributions, since one
// name may launch in several shapes.
inline constexpr double kUnderfilledEfficiency = 0.75;

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
  // Launches that leave SMs idle: a wave efficiency under
  // kUnderfilledEfficiency, or fewer blocks than SMs. Their GPU time, and
  // the SM time their partial waves left idle (sum of time x (1 - efficiency)).
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

struct DeviceTimeline {
  int device = 0;
  double wall_s = 0;                // the window measured
  double busy_s = 0;                // union of all busy intervals
  double busy_by[kBusyCount] = {};  // overlaps counted once: sum == busy_s
  double idle_s = 0;                // wall_s - busy_s
  double idle_by[kIdleCount] = {};  // sum == idle_s
  std::vector<IdleSite> idle_sites; // blocked-call idle by call site, most first
  std::vector<KernelRow> top_kernels;  // most GPU time first
  double short_kernel_busy_s = 0;   // in kernels shorter than 10 us
  uint64_t kernels = 0;             // kernel records: every kernel that ran, <<<>>> ones too
  uint64_t launches = 0;            // launches through the launch API, counted by the hooks (all devices)
  Steps steps;
  // Idle seconds per bucket of the run, from the series' origin
  // (time_buckets.h: series_origin_ticks); the window measured ends at
  // series_end_s (seconds from that origin). For the summary's "series".
  TimeBuckets idle_series{TimeBuckets::Reduce::kSum};
  double series_end_s = 0;
};

struct Snapshot {
  Status status = Status::kNotStarted;
  std::string detail;  // kHeldByOther: the tool's name; kUnavailable: why; else ""
  std::string how_to_enable;  // when not measured under auto: what to do
  std::vector<DeviceTimeline> devices;
  uint64_t records = 0;         // activity records processed
  uint64_t dropped_by_pool = 0; // buffers refused by the bounded pool (records lost: unknown, see cupti)
  uint64_t buffers_beyond_cap = 0;  // lent past the pool's ceiling: this CUPTI crashes on a refusal
  uint64_t dropped_by_cupti = 0;  // cuptiActivityGetNumDroppedRecords, summed
  uint64_t host_intervals_dropped = 0;
  uint64_t buffer_bytes_limit = 0;
  uint64_t buffer_bytes_peak = 0;
  // kMeasured, when a tool that subscribed later took CUPTI: its name, and
  // when (seconds after the timeline started); the figures end there.
  std::string stopped_by;
  double stopped_after_s = 0;
};

// Starts the timeline per the gpu_timeline knob (session start, once).
void start();
// Waits, up to `max_seconds`, until the work start() handed to its own
// thread is done (at once when none is pending): a setenv must not run
// beside it (Note [The start's thread reads no environment] in
// timeline.cc). False if it was still running at the deadline.
bool wait_for_start(double max_seconds);
// Flushes CUPTI's buffers, waits (bounded) for them to be processed, and
// returns the figures as of now. Cheap when the timeline is off.
Snapshot snapshot();
// At exit: flush, disable activities, unsubscribe (idempotent).
void stop();
// In the child of a fork: forgets everything; the child measures nothing.
void after_fork_child();

}  // namespace timeline
}  // namespace gpuslack
