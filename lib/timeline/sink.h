// What the CUPTI reader (timeline/cupti_session.h) feeds and the snapshot
// reads back: the GPU's decoded records, the host's blocked intervals and
// step marks, and the per-device figures made of them. The device analysis
// (timeline/device_analysis.h) implements it; tests use their own.
//
// The reader calls, in time order of delivery (not of the records: CUPTI
// delivers buffers, and records within them, roughly but not strictly in
// time order):
//   add(GpuActivity) / add(HostInterval) / add_step(ticks), any mix;
//   commit(watermark): every GPU record of work that ended before
//     `watermark` has now been added (a flush happened at it and its
//     buffers were processed); what is older may be folded and forgotten;
//     commit_final(watermark) at stop;
//   fill(start, end, out): the figures of [start, end), one DeviceTimeline
//     per device seen, with busy, idle and its causes, kernels and steps
//     (launches: timeline.cc sets them).
//
// Thread safety: the caller serializes every call (one at a time, from the
// reader's worker or from a snapshot, any thread); an implementation needs
// no lock of its own.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ledger/host_activity.h"
#include "timeline/gpu_activity.h"
#include "timeline/timeline.h"

namespace gpuslack {
namespace timeline {

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void add(const GpuActivity& activity) = 0;
  virtual void add(const ledger::HostInterval& interval) = 0;
  virtual void add_step(uint64_t ticks) = 0;
  virtual void commit(uint64_t watermark_ticks) = 0;
  // At stop: everything up to `watermark_ticks` is final, nothing more
  // will come (by default a commit).
  virtual void commit_final(uint64_t watermark_ticks) { commit(watermark_ticks); }
  virtual void fill(uint64_t start_ticks, uint64_t end_ticks, std::vector<DeviceTimeline>* out) = 0;
};

struct SinkOptions {
  double tick_seconds = 1e-9;
  uint64_t launch_bound_gap_ticks = 0;  // launch_bound_gap_us in ticks
  DeviceLimitsFn device_limits = nullptr;  // timeline/device_limits.h in the library
};

// The device analysis behind the process's timeline (defined with it).
std::unique_ptr<Sink> make_device_analysis(const SinkOptions& options);

}  // namespace timeline
}  // namespace gpuslack
