// One device's busy and idle time, from its GPU activity records
// (gpu_activity.h) and the host's blocked calls (ledger/host_activity.h):
// the sweep behind timeline.h's DeviceTimeline. Pure logic: no CUPTI, no
// clock; every time is in the host's ticks, the thresholds too. The
// analysis of all devices together, which the timeline's worker drives, is
// TimelineAnalysis (timeline_analysis.h).
//
// Busy: the union of the records, overlaps counted once, each instant
// charged to the highest-priority kind running then: compute >
// communication > copies > memsets (a kernel overlapping a copy is compute,
// timeline.h; NCCL kernels overlapping copies are communication). Idle: the
// rest of the window, charged per Note [Why the GPU idled] (timeline.h) by
// IdleAttributor (idle_attribution.h). short_kernel_busy: the union of the
// kernels shorter than the short-kernel threshold (<= busy).
//
// The sweep keeps, for each kind, how far the records already seen cover
// time past its position (records come sorted by start, so what lies ahead
// of the position is a prefix per kind); moving the position to the next
// record's start charges the stretch between to the kinds by priority, and
// what no kind covers is a gap. The cost is a few compares per record.
//
// Note [Commit and late records]: records arrive in any order across
// buffers (CUPTI delivers a kernel when it ends; a flush delivers what has
// ended). They wait in `pending` until commit(watermark) makes every
// instant before the watermark final: the pending records that start
// before it are sorted, swept, their gaps charged, and dropped; the memory
// kept is what is not final yet (records starting at or after the
// watermark, the per-kind reach past it, the open step). The caller picks
// the watermark: a time by which every record starting earlier has arrived,
// i.e. a CUPTI flush time, lagged by the longest operation it expects still
// in flight (the timeline's worker commits at the previous flush's time).
// A record that still arrives starting before the device's position (late)
// is clipped to the position: the part from there on is counted as if it
// had come in time (it shows in the next snapshot, provisional or
// committed), the part before is dropped and counted (late_ticks), since
// the instants before were final and charged already.
// A gap still open at the watermark and no longer than the launch-bound
// threshold stays pending (the position stops at its start) unless the
// commit is final: whether it is launch-bound depends on where it ends. The
// position is therefore <= the watermark, by at most the threshold.
//
// Thread safety: none. One thread (the timeline's worker) owns it; the
// caller serializes every call. Copyable: a provisional snapshot sweeps a
// copy.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/absl_containers.h"
#include "base/time_buckets.h"
#include "ledger/host_activity.h"
#include "timeline/gpu_activity.h"
#include "timeline/idle_attribution.h"
#include "timeline/occupancy.h"
#include "timeline/step_table.h"
#include "timeline/timeline.h"

namespace gpuslack {
namespace timeline {

// The frames of a call site, from its key: ledger::call_site_frames in the
// library, a fake in tests.
using SiteFramesFn = bool (*)(uint64_t key, std::vector<void*>* frames);

// What the analysis is told once, in ticks.
struct AnalysisOptions {
  uint64_t start_ticks = 0;             // the window starts here (timeline enabled)
  uint64_t launch_bound_gap_ticks = 0;  // launch_bound_gap_us in ticks
  uint64_t short_kernel_ticks = 0;      // 10 us in ticks: shorter kernels are "short"
  size_t top_kernels = 10;
  DeviceLimitsFn device_limits = nullptr;  // null: limits unknown (no blocks per SM, waves)
  size_t worst_steps = 5;
  // The idle series (DeviceTimeline::idle_series): its origin, and seconds
  // per tick (0: no series).
  uint64_t series_origin_ticks = 0;
  double tick_seconds = 0;
};

class DeviceAnalysis {
 public:
  // The device's window starts at `start_ticks` (the analysis start, or the
  // watermark at which the device's first record arrived); its first
  // summary interval is numbered first_interval.
  DeviceAnalysis(uint64_t start_ticks, const AnalysisOptions& options, uint64_t first_interval = 0);

  // A record of this device (start <= end; the caller checks). Late ones
  // are clipped (Note [Commit and late records]).
  void add(const GpuActivity& a) {
    Span s{a.start_ticks, a.end_ticks, a.kind,
           is_kernel(a.kind) && a.end_ticks - a.start_ticks < short_kernel_ticks_};
    if (s.start < pos_) {
      if (!clip_late(&s)) return;
    }
    pending_.push_back(s);
  }
  // A step mark (index: its step's number) and a summary-interval boundary
  // (index: the interval it opens); the host's, for every device.
  void add_step(uint64_t ticks, uint64_t index) {
    if (marks_.add_boundary(ticks, index)) next_boundary_ = std::min(next_boundary_, ticks);
  }
  void add_interval_boundary(uint64_t ticks, uint64_t index) {
    if (intervals_.add_boundary(ticks, index)) next_boundary_ = std::min(next_boundary_, ticks);
  }

  // Makes the window before `watermark` final (Note [Commit and late
  // records]); `final`: up to the watermark exactly, open gap included.
  // `hosts`: every blocked call that may overlap [position, watermark),
  // sorted by start (then tid), calls non-null.
  void commit(uint64_t watermark, bool final, const std::vector<ledger::HostInterval>& hosts);

  // The figures up to `now`: the committed ones, plus the pending tail swept
  // on a copy (this one is unchanged). Leaves top_kernels and launches to
  // the caller. frames: may be null (frames left empty).
  void fill(uint64_t now, bool from_marks, const std::vector<ledger::HostInterval>& hosts, double tick_seconds,
            SiteFramesFn frames, DeviceTimeline* out) const;

  // Everything before this is final.
  uint64_t position() const { return pos_; }
  uint64_t start() const { return start_; }
  size_t pending_records() const { return pending_.size(); }
  uint64_t late_records() const { return late_records_; }
  uint64_t late_ticks() const { return late_ticks_; }

  static bool is_kernel(Busy k) { return k == Busy::kCompute || k == Busy::kCommunication; }
  // Seconds from the series' origin to `ticks` (negative before it).
  double series_seconds(uint64_t ticks) const {
    return static_cast<double>(static_cast<int64_t>(ticks - series_origin_)) * series_tick_s_;
  }

 private:
  struct Span {
    uint64_t start, end;
    Busy kind;
    bool short_kernel;
  };
  bool clip_late(Span* s);
  void sort_pending();
  void advance(uint64_t to, IdleAttributor& gaps);
  void charge_gap(uint64_t from, uint64_t to, IdleAttributor& gaps);
  // The committed figures into *out (the caller swept up to where it wants).
  void write(bool from_marks, double tick_seconds, SiteFramesFn frames, DeviceTimeline* out) const;

  uint64_t start_;
  uint64_t launch_gap_ticks_;
  uint64_t short_kernel_ticks_;

  std::vector<Span> pending_;
  size_t sorted_ = 0;           // pending_[0, sorted_) is sorted by start
  // sort_pending's merges: keeps its memory, and a copy (fill's) starts
  // without it.
  struct Scratch {
    Scratch() = default;
    Scratch(const Scratch&) {}
    Scratch& operator=(const Scratch&) { return *this; }
    std::vector<Span> spans;
  };
  Scratch scratch_;
  std::vector<size_t> runs_;    // sort_pending's runs

  uint64_t pos_;                      // swept up to here
  uint64_t reach_[kBusyCount];        // how far each kind's records seen reach
  uint64_t reach_any_;                // max of reach_: the device idles from here
  uint64_t short_reach_;              // how far the short kernels seen reach
  uint64_t busy_[kBusyCount] = {};    // ticks
  uint64_t short_busy_ = 0;
  uint64_t idle_[kIdleCount] = {};
  absl::flat_hash_map<std::pair<const ApiCall*, uint64_t>, uint64_t> idle_by_site_;
  StepTracker marks_;      // program step marks
  StepTracker intervals_;  // summary intervals
  uint64_t next_boundary_ = UINT64_MAX;  // the earlier of theirs
  uint64_t late_records_ = 0;
  uint64_t late_ticks_ = 0;
  // Idle per second of the run: fixed memory, no allocation (time_buckets.h).
  uint64_t series_origin_;
  double series_tick_s_;
  TimeBuckets idle_series_{TimeBuckets::Reduce::kSum};
};

}  // namespace timeline
}  // namespace gpuslack
