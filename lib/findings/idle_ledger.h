// What is left of each device's GPU idle, by cause, for the findings to
// charge (findings.h: evaluate() makes one and hands it to the rule
// families that charge GPU idle).
//
// Note [Each idle second charged once]: the findings partition the GPU's
// idle time. Each second of a device's idle, charged by the timeline to one
// cause (Note [Why the GPU idled] in timeline/timeline.h), goes to at most
// one finding: the one whose fix removes it. evaluate() runs the rules with
// one IdleLedger, each taking its seconds from what the rules before it
// left, in this order:
//   1. allocator_sync or fragmentation (never both: the native allocator
//      or allocator:vmm): the allocation idle.
//   2. sync_copies: the synchronization idle; the copy idle when the
//      copies are device-to-host only (the reads' own copies); and of each
//      device's host-bound idle at most its busy time. Without the wait in
//      every step the host prepares the next step while the GPU runs this
//      one, which hides at most the GPU's busy time of the host's gaps: a
//      step of GPU time B and host time H idles H behind a wait and
//      max(0, H - B) without one. Summed over the run (min of the sums, an
//      overestimate where steps differ, never past the idle).
//   3. pageable_copies: the copy idle left.
//   4. host_bound: the host-bound idle left, which stays with the queue kept
//      full (the host is slower than the GPU); it fires only when that
//      remainder meets its thresholds.
//   5. launch_bound: the launch-bound idle.
// Idle in collectives and other calls is no finding's: it stays
// unexplained. A rule that does not fire charges nothing, so its seconds
// stay for the next.
// A finding whose cost is GPU idle (sync_copies, host_bound, launch_bound)
// costs what it was charged: cost_s == gpu_idle_s. One whose cost is the
// host's blocked time (allocator_sync, fragmentation, pageable_copies: what
// its fix gives back to the thread) keeps that cost, and its gpu_idle_s is
// what it was charged; their calls are disjoint (allocation calls, pageable
// host-to-device copies), so no host second is charged twice either. One
// whose cost is GPU busy time (underfilled_kernels, the collective rules)
// has gpu_idle_s -1: none of it is idle; that time is charged once too
// (underfilled_kernels compute kernels' SM time, never NCCL's; the
// collective rules each row's time once, Note [The GPU's time] in
// findings/collective_rules.cc). So the findings' gpu_idle_s add up
// to at most the GPU's idle, and the headline says what share of it they
// explain (report/idle_explained.h); the job report sums ranks the same
// way (python_shim/gpuslack/job/aggregate.py).
//
// Thread safety: a value; one evaluate() owns it.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "report/summary.h"

namespace gpuslack {
namespace findings {

class IdleLedger {
 public:
  // Every device's idle by cause, nothing charged; measures nothing when the
  // timeline did not measure.
  explicit IdleLedger(const report::Summary& s);

  bool measured() const { return measured_; }
  size_t devices() const { return left_.size(); }
  // Seconds of `cause` not yet charged on the device at `index` (its
  // position in gpu_timeline.devices).
  double left(size_t index, timeline::Idle cause) const;
  // The same over every device; -1 when the timeline did not measure.
  double left(timeline::Idle cause) const;
  // Charges `seconds` of `cause` on the device (at most what is left);
  // returns what it charged.
  double charge(size_t index, timeline::Idle cause, double seconds);
  // Charges everything left of `cause` on every device; returns it, -1
  // when the timeline did not measure.
  double charge_all(timeline::Idle cause);

 private:
  bool measured_ = false;
  std::vector<std::array<double, timeline::kIdleCount>> left_;
};

}  // namespace findings
}  // namespace gpuslack
