// The copy rules (lib/findings/findings.h), each with its thresholds
// (Note [Finding thresholds] in findings/figures.h):
//
// pageable_copies: host-to-device copies from pageable memory blocked the
//   host (the runtime drains the stream first, or gpuslack staged them).
//   Steady state: the copy calls' blocked time in the middle of the run
//   (CallRow::steady_s of cudaMemcpy*), capped at the pageable H2D copies'
//   host time, must reach the thresholds. Cost: the pageable H2D copies'
//   host time. Where: the byte-sampled pageable call sites (StagingSection).
//   Fix: pin the buffer (pin_memory=True and non_blocking=True in PyTorch;
//   cudaMallocHost or cudaHostRegister natively), or stage_copies where it
//   was off.
//
// sync_copies: the loop waits for the GPU: synchronous device-to-host
//   copies (.item(), .cpu()) and explicit synchronizations ("waiting for
//   the GPU": cudaDeviceSynchronize, cudaStreamSynchronize, ...). Steady
//   state: the synchronizations' blocked time in the middle of the run,
//   plus the copy calls' capped at the D2H copies' host time, must reach
//   the thresholds. Note [What a wait for the GPU costs]: the host's wait
//   is not lost while the GPU works through the queue (the headline does
//   not count it); what a wait in the loop costs is the GPU's idle that
//   it causes: the queue drained, the GPU idles while the host returns,
//   does its own work and launches again, instead of running ahead of the
//   GPU. So the rule needs the GPU timeline: cost = the GPU idle charged
//   to synchronizations, to the D2H copies (where no H2D copy time mixes
//   with them) and, of each device's host-bound gaps, the part the wait
//   keeps from overlapping the GPU's work: at most the GPU's busy time
//   (Note [Each idle second charged once] in findings/idle_ledger.h; the
//   rest is host_bound's, whose fix is feeding the GPU faster), and it
//   must reach the thresholds and kMinIdleShare of wall time.
//   Without the timeline there is no finding: a loop that reads back
//   behind long kernels with nothing else to do loses nothing (issue 17
//   found the demo's per-step cudaStreamSynchronize "costing" 33% of wall
//   while the GPU idled 1 ms in them).
//
// sync_copies charges its GPU idle before pageable_copies, which is
// charged the copy idle left (Note [Each idle second charged once]).
#include <algorithm>
#include <vector>

#include "findings/figures.h"
#include "findings/findings.h"

namespace gpuslack {
namespace findings {
namespace {

// Host seconds of copies of `kind`, from `host` memory (kNone: any).
double copy_seconds(const report::Summary& s, CopyKind kind, HostMemory host, uint64_t* count, uint64_t* bytes) {
  double total = 0;
  for (const report::CopyRow& r : s.copies) {
    if (r.copy != kind || (host != HostMemory::kNone && r.host != host)) continue;
    total += r.total_s;
    *count += r.count;
    *bytes += r.bytes;
  }
  return total;
}

// steady_s of the copy calls (runtime and driver, every "Memcpy" of the
// copies category; memsets left out).
double copy_calls_steady(const report::Summary& s) {
  double steady = 0;
  for (const report::CallRow& row : s.calls)
    if (row.category == Category::kCopy && row.name.find("Memcpy") != std::string::npos) steady += row.steady_s;
  return steady;
}

void pageable_copies(const report::Summary& s, const Context& c, IdleLedger* idle, std::vector<report::Finding>* out) {
  uint64_t count = 0, bytes = 0;
  const double host_s = copy_seconds(s, CopyKind::kHostToDevice, HostMemory::kPageable, &count, &bytes);
  const double steady = std::min(host_s, copy_calls_steady(s));
  if (!worth_reporting(steady, s.wall_s)) return;
  report::Finding f;
  f.rule = "pageable_copies";
  f.title = "host-to-device copies from pageable memory block the host";
  set_cost(&f, host_s, s.wall_s);
  f.gpu_idle_s = idle->charge_all(timeline::Idle::kCopies);
  f.evidence.emplace_back("pageable H2D copies",
                          std::to_string(count) + ", " + bytes_text(static_cast<double>(bytes)) + ", " +
                              seconds_text(host_s) + " blocked");
  f.evidence.emplace_back("copies in steady state (the run's middle 80%)", seconds_text(steady));
  const bool staging_off = s.staging.present && !s.staging.stats.enabled;
  if (s.staging.present)
    f.evidence.emplace_back("staged by gpuslack", std::to_string(s.staging.stats.h2d.staged) + " of " +
                                                      std::to_string(s.staging.stats.h2d.seen) +
                                                      (staging_off ? " (stage_copies off)" : ""));
  for (const report::PageableSiteRow& site : s.staging.sites) {
    if (static_cast<int>(f.where.size()) == kMaxSites) break;
    if (!site.frames.empty()) f.where.push_back(site.frames);
  }
  if (f.where.empty()) f.where = sites_of(s, Category::kCopy);
  if (c.pytorch) {
    f.fix = "pin the batch: DataLoader(pin_memory=True), or tensor.pin_memory(), and copy with "
            ".to('cuda', non_blocking=True)";
  } else {
    f.fix = "allocate the host buffer pinned (cudaMallocHost, or cudaHostRegister it once) and copy with "
            "cudaMemcpyAsync";
  }
  if (staging_off) f.fix += "; or let gpuslack stage them: GPUSLACK_CONF=stage_copies:true";
  out->push_back(std::move(f));
}

void sync_copies(const report::Summary& s, IdleLedger* idle, std::vector<report::Finding>* out) {
  uint64_t d2h_count = 0, d2h_bytes = 0, h2d_count = 0, h2d_bytes = 0;
  const double d2h_s = copy_seconds(s, CopyKind::kDeviceToHost, HostMemory::kNone, &d2h_count, &d2h_bytes);
  const double h2d_s = copy_seconds(s, CopyKind::kHostToDevice, HostMemory::kNone, &h2d_count, &h2d_bytes);
  double sync_s = 0, sync_steady = 0;
  uint64_t syncs = 0;
  std::vector<std::pair<std::string, std::string>> evidence;
  for (const report::CallRow& row : s.calls) {
    if (row.category != Category::kSync || row.total_s <= 0) continue;
    sync_s += row.total_s;
    sync_steady += row.steady_s;
    syncs += row.count;
    evidence.emplace_back(row.name + " calls", std::to_string(row.count) + ", " + seconds_text(row.total_s) + " blocked");
  }
  const double steady = sync_steady + std::min(d2h_s, copy_calls_steady(s));
  if (!worth_reporting(steady, s.wall_s)) return;
  // Note [What a wait for the GPU costs]: the GPU idle it causes, or nothing.
  const bool d2h_only = d2h_s > 0 && h2d_s < 0.1 * d2h_s;
  if (!idle->measured()) return;  // the timeline did not measure
  // See Note [Each idle second charged once]: what dropping the waits removes.
  const double sync_idle = idle->left(timeline::Idle::kSync);
  const double copy_idle = d2h_only ? idle->left(timeline::Idle::kCopies) : 0;
  std::vector<double> hidden(idle->devices(), 0);  // host-bound gaps the GPU's busy time would hide
  double host_idle = 0, host_left = 0;
  for (size_t i = 0; i < idle->devices(); ++i) {
    const double gaps = idle->left(i, timeline::Idle::kHostBound);
    hidden[i] = std::min(gaps, std::max(0.0, s.gpu_timeline.devices[i].busy_s));
    host_idle += hidden[i];
    host_left += gaps - hidden[i];
  }
  const double cost = sync_idle + copy_idle + host_idle;
  if (!worth_reporting(cost, s.wall_s) || cost < kMinIdleShare * s.wall_s) return;
  idle->charge_all(timeline::Idle::kSync);
  if (d2h_only) idle->charge_all(timeline::Idle::kCopies);
  for (size_t i = 0; i < hidden.size(); ++i) idle->charge(i, timeline::Idle::kHostBound, hidden[i]);
  report::Finding f;
  f.rule = "sync_copies";
  f.title = "the loop waits for the GPU: synchronous D2H copies and synchronizations";
  set_cost(&f, cost, s.wall_s);
  f.gpu_idle_s = cost;
  f.evidence.emplace_back("host waited", seconds_text(d2h_s + sync_s));
  f.evidence.emplace_back("GPU idle in the waits and the host's gaps after them",
                          seconds_text(sync_idle + copy_idle) + " + " + seconds_text(host_idle));
  if (host_left > 0)
    f.evidence.emplace_back("host's gaps beyond the GPU's work (this fix leaves them: host_bound's)",
                            seconds_text(host_left));
  if (d2h_count > 0)
    f.evidence.emplace_back("D2H copies", std::to_string(d2h_count) + ", " +
                                              bytes_text(static_cast<double>(d2h_bytes)) + ", " +
                                              seconds_text(d2h_s) + " blocked");
  for (auto& e : evidence) f.evidence.push_back(std::move(e));
  f.evidence.emplace_back("in steady state (the run's middle 80%)", seconds_text(steady));
  f.where = sites_of(s, Category::kSync);
  // Copy call sites only where they are D2H copies: no H2D copy time to confuse them with.
  if (d2h_only) {
    for (std::vector<std::string>& frames : sites_of(s, Category::kCopy))
      if (static_cast<int>(f.where.size()) < kMaxSites) f.where.push_back(std::move(frames));
  }
  f.fix = "keep values on the GPU inside the loop: drop per-step .item()/.cpu()/print of GPU tensors and "
          "explicit synchronizations, or read them every N steps (copy to pinned memory with "
          "non_blocking=True and wait on an event)";
  out->push_back(std::move(f));
}

}  // namespace

void copy_rules(const report::Summary& s, const Context& c, IdleLedger* idle, std::vector<report::Finding>* out) {
  sync_copies(s, idle, out);  // first: Note [Each idle second charged once]
  pageable_copies(s, c, idle, out);
}

}  // namespace findings
}  // namespace gpuslack
