// The GPU-timeline rules (lib/findings/findings.h), only when the timeline
// measured (gpu_timeline; Note [Why the GPU idled] in timeline/timeline.h
// says how idle time is charged):
//
// host_bound: a device idled with no CUDA call in flight (data loading,
//   decoding, Python) for at least kMinIdleShare of the window it measured.
//   Cost: that idle time, of the device that idled most so, less what
//   sync_copies was charged (the gaps its waits keep from overlapping the
//   GPU's work: Note [Each idle second charged once] in
//   findings/idle_ledger.h); what is left must meet the thresholds.
// launch_bound: a device idled in gaps between launches no longer than
//   launch_bound_gap_us (the GPU ran out of work while the host launched)
//   for at least kMinIdleShare of its window. Cost: that idle time.
// Where the program marks steps, the median step must idle kMinIdleShare too
// (steady state, not start-up).
//
// Both are GPU idle time, taken from the IdleLedger after the copy rules:
// gpu_idle_s is set, cost_share is of the summary's wall time. Neither has call sites (no hooked call was in flight).
#include <algorithm>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "findings/figures.h"
#include "findings/findings.h"

namespace gpuslack {
namespace findings {
namespace {

inline constexpr uint64_t kMinSteps = 3;   // marked steps enough to judge the steady state

// Steady state: where the program marks its steps (gpuslack_step), the
// median step must idle at least kMinIdleShare too, so idle time spent before
// the loop (start-up, loading a model) is not taken for the loop's.
bool idles_in_steady_state(const report::GpuDeviceRow& d) {
  if (!d.steps.from_marks || d.steps.count < kMinSteps) return true;
  return 1 - d.steps.busy_share_p50 >= kMinIdleShare;
}

// The index of the device with most idle of `cause` left in `ledger`, or
// -1 when none has enough.
int worst_device(const report::Summary& s, const IdleLedger& ledger, timeline::Idle cause) {
  int worst = -1;
  double worst_idle = 0;
  for (size_t i = 0; i < s.gpu_timeline.devices.size(); ++i) {
    const report::GpuDeviceRow& d = s.gpu_timeline.devices[i];
    const double idle = ledger.left(i, cause);
    if (d.wall_s <= 0 || idle < kMinSeconds || idle < kMinIdleShare * d.wall_s) continue;
    if (!idles_in_steady_state(d)) continue;
    if (worst < 0 || idle > worst_idle) {
      worst = static_cast<int>(i);
      worst_idle = idle;
    }
  }
  return worst;
}

// The finding for the idle of `cause` left on the device at `index`, which
// it charges.
report::Finding idle_finding(const report::Summary& s, IdleLedger* ledger, size_t index, timeline::Idle cause) {
  const report::GpuDeviceRow& d = s.gpu_timeline.devices[index];
  report::Finding f;
  const double all = d.idle_by[static_cast<int>(cause)];
  const double idle = ledger->charge(index, cause, ledger->left(index, cause));
  f.cost_s = idle;
  f.gpu_idle_s = idle;
  const double wall = std::max(s.wall_s, d.wall_s);  // the longer: a share never overstated
  f.cost_share = std::min(1.0, idle / wall);
  f.evidence.emplace_back("device", absl::StrFormat("%d", d.device));
  f.evidence.emplace_back(absl::StrFormat("GPU idle, %s", timeline::idle_key(cause)),
                          absl::StrFormat("%.3f s of %.3f s measured (%.0f%%)", all, d.wall_s, 100 * all / d.wall_s));
  if (all - idle > 0)
    f.evidence.emplace_back("of it charged to the waits for the GPU (sync_copies)",
                            absl::StrFormat("%.3f s", all - idle));
  f.evidence.emplace_back("GPU busy", absl::StrFormat("%.3f s (%.0f%%)", d.busy_s, 100 * d.busy_s / d.wall_s));
  if (d.steps.count > 0)
    f.evidence.emplace_back(d.steps.from_marks ? "median step, GPU busy" : "median interval, GPU busy",
                            absl::StrFormat("%.0f%%", 100 * d.steps.busy_share_p50));
  return f;
}

void host_bound(const report::Summary& s, const Context& ctx, IdleLedger* idle, std::vector<report::Finding>* out) {
  const int d = worst_device(s, *idle, timeline::Idle::kHostBound);
  if (d < 0) return;
  report::Finding f = idle_finding(s, idle, d, timeline::Idle::kHostBound);
  f.rule = "host_bound";
  f.title = "The GPU waits for the host: idle with no CUDA call in flight";
  f.fix = ctx.pytorch
              ? "Prepare batches off the training loop: DataLoader(num_workers=N) with N up to the free CPU cores, "
                "prefetch_factor (2 by default) higher, pin_memory=True; store data pre-decoded (tokenized, "
                "decoded images) so workers keep up."
              : "Prepare the next batch while the GPU runs this one: load and decode on other threads or processes "
                "with a queue a few batches deep, into pinned buffers; store data pre-decoded.";
  out->push_back(std::move(f));
}

void launch_bound(const report::Summary& s, const Context& ctx, IdleLedger* idle, std::vector<report::Finding>* out) {
  const int worst = worst_device(s, *idle, timeline::Idle::kLaunchBound);
  if (worst < 0) return;
  const report::GpuDeviceRow* d = &s.gpu_timeline.devices[worst];
  report::Finding f = idle_finding(s, idle, worst, timeline::Idle::kLaunchBound);
  f.rule = "launch_bound";
  f.title = "The GPU runs out of work between kernel launches";
  if (d->kernels > 0) {
    const double compute = d->busy_by[static_cast<int>(timeline::Busy::kCompute)];
    f.evidence.emplace_back("kernels", absl::StrFormat("%llu, %.1f us each on average",
                                                       static_cast<unsigned long long>(d->kernels),
                                                       1e6 * compute / static_cast<double>(d->kernels)));
    f.evidence.emplace_back("in kernels under 10 us", absl::StrFormat("%.3f s", d->short_kernel_busy_s));
  }
  f.fix = ctx.pytorch
              ? "Launch fewer, larger pieces of work: torch.compile(model, mode=\"reduce-overhead\") (CUDA graphs "
                "and fused kernels), or capture the step with torch.cuda.graphs / CUDAGraph; larger batches."
              : "Launch fewer, larger pieces of work: capture the step's launches once into a CUDA graph "
                "(cudaStreamBeginCapture, cudaGraphLaunch per step), fuse small kernels, or grow the batch.";
  out->push_back(std::move(f));
}

}  // namespace

void timeline_rules(const report::Summary& s, const Context& c, IdleLedger* idle, std::vector<report::Finding>* out) {
  if (s.gpu_timeline.status != timeline::Status::kMeasured || !idle->measured()) return;
  host_bound(s, c, idle, out);
  launch_bound(s, c, idle, out);
}

}  // namespace findings
}  // namespace gpuslack
