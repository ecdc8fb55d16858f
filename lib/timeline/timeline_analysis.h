// The GPU timeline's analysis: every device's DeviceAnalysis
// (device_analysis.h), the host's blocked calls and step marks they share,
// and the kernels each device ran (kernel_table.h). What timeline.cc's
// worker feeds and what a snapshot reads; pure logic, times in ticks.
//
// Use (one owner thread, the timeline's worker):
//   TimelineAnalysis a(options);             // at start: window from options.start_ticks
//   a.add(gpu_activity);                     // each decoded record, any order
//   a.add(host_interval);                    // each drained blocked call
//   a.add_step(ticks);                       // each drained step mark, in order
//   a.set_launches(ledger::launches());
//   a.commit(previous_flush_ticks);          // after a flush (Note [Commit and late records])
//   a.add_interval_boundary(now);            // at a summary snapshot, then
//   a.fill(now, clock::tick_seconds(), &ledger::call_site_frames, &snapshot.devices);
//   a.commit(now, /*final=*/true);           // at stop; then fill(now, ...)
//
// Devices: one DeviceAnalysis per device id seen in a record (or named by
// ensure_device), made on first use (its limits asked then:
// AnalysisOptions::device_limits); its window starts at the analysis
// start, or, for a device first seen after a commit, at the latest
// watermark (its wall is shorter). Ids outside [0, kMaxDevices) are bad
// input: counted, one log line.
//
// Host intervals apply to every device: a thread blocked in cudaFree stalls
// all of them, and a device idle meanwhile is charged to it. They are kept
// until every device's position has passed their end (then dropped); one
// that arrives already past is counted (host_intervals_late) and dropped.
//
// Steps: program marks (add_step) number the steps from 0 in the order
// marked; when the program marks none, the steps are the summary intervals
// (add_interval_boundary: the first from the window's start). Marks and
// boundaries are the host's, the same for every device.
//
// Memory: the records not yet committed (bounded by how often the caller
// commits: the worker commits at every flush), the host intervals not yet
// passed, the boundaries not yet reached; per device one entry per kernel
// name and per (call, site key), and per step kind a sample of at most
// StepTable::kSampleSize steps (1.5 MiB once a run has that many) and the
// few worst. fill() copies a device's sweep state to sweep the tail.
//
// fill(now) with `now` before a device's position (a commit past now)
// gives the committed figures, up to the position.
//
// Thread safety: none, and no lock inside: one thread owns the analysis
// (the timeline's worker) and serializes every call, fill included.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ledger/host_activity.h"
#include "timeline/device_analysis.h"
#include "timeline/gpu_activity.h"
#include "timeline/kernel_table.h"
#include "timeline/timeline.h"

namespace gpuslack {
namespace timeline {

class TimelineAnalysis {
 public:
  static constexpr int kMaxDevices = 1024;

  explicit TimelineAnalysis(const AnalysisOptions& options);

  // Hot for the worker: one record (<= 50 ns amortized, commit included:
  // bench/timeline_analysis_bench.cc).
  void add(const GpuActivity& a);
  void add(const ledger::HostInterval& h);
  void add_step(uint64_t ticks);
  void add_interval_boundary(uint64_t ticks);
  void set_launches(uint64_t launches) { launches_ = launches; }
  // Makes device `id` known (idle until it runs something).
  void ensure_device(int id);

  // Everything before `watermark` becomes final on every device (Note
  // [Commit and late records]); `final`: exactly up to it, at stop.
  void commit(uint64_t watermark, bool final = false);

  // One DeviceTimeline per device, by id, up to `now`: committed figures
  // plus the pending tail, provisionally (state unchanged). frames: how
  // site keys become frames (ledger::call_site_frames), or null.
  void fill(uint64_t now, double tick_seconds, SiteFramesFn frames, std::vector<DeviceTimeline>* out) const;

  uint64_t records() const { return records_; }                 // GPU records added
  uint64_t bad_records() const { return bad_records_; }         // refused (end < start, bad device)
  uint64_t late_records() const;                                // clipped or dropped as late
  uint64_t late_ticks() const;                                  // their time before the position
  uint64_t host_intervals_late() const { return hosts_late_; }  // arrived after their time was final
  uint64_t host_intervals_bad() const { return hosts_bad_; }    // null call, end < start
  size_t pending_records() const;
  size_t pending_host_intervals() const { return hosts_.size(); }
  size_t devices() const;

 private:
  struct Device {
    Device(uint64_t start, const AnalysisOptions& o, uint64_t first_interval) : sweep(start, o, first_interval) {}
    DeviceAnalysis sweep;
    KernelTable kernels;
  };
  struct Boundary {
    uint64_t ticks, index;
  };
  Device* device(int id);
  Device* make_device(int id);
  void bad_input(const char* what);

  AnalysisOptions options_;
  std::vector<std::unique_ptr<Device>> by_id_;  // index: device id
  int last_id_ = -1;
  Device* last_ = nullptr;

  uint64_t committed_;   // the latest watermark
  uint64_t host_floor_;  // every device's position is at or past this
  std::vector<ledger::HostInterval> hosts_;
  // For devices made later: marks and boundaries at or after committed_.
  std::vector<Boundary> marks_, boundaries_;
  uint64_t marks_seen_ = 0, boundaries_seen_ = 0;
  uint64_t launches_ = 0;
  uint64_t records_ = 0, bad_records_ = 0, hosts_late_ = 0, hosts_bad_ = 0;
  bool logged_bad_ = false;
};

}  // namespace timeline
}  // namespace gpuslack
