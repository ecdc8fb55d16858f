// The allocator rules (lib/findings/findings.h), each with its thresholds
// (Note [Finding thresholds] in findings/figures.h):
//
// allocator_sync: the runtime's cudaFree (and cudaMalloc, where it
//   synchronizes) waits for the whole device. Fires when, with the native
//   allocator (no allocator:vmm row), these calls blocked at least the
//   thresholds in the middle of the run (CallRow::steady_s): frees at
//   start-up or teardown alone never fire it. Cost: their host time over
//   the whole run. Fix: GPUSLACK_CONF=allocator:vmm; in PyTorch (libtorch
//   loaded, which then frees only when its cache runs short) without
//   gpuslack.torch.use(), PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
//   Where allocator:vmm is selected already but off (the summary's
//   allocator_status: no VMM support), the fix recommends nothing that is
//   in force or needs the same support (expandable segments map with VMM
//   too): it says the allocator is off, why, and what helps without it.
//
// fragmentation: allocator:vmm waited for pending frees under memory
//   pressure (DeviceStats::stall_s) at least the thresholds, with a sign of
//   fragmentation: out-of-memory retries or failed allocations, or peak
//   reserved at least kFarAbove times peak allocated. Cost: that stall.
//   Evidence: reserved against allocated, retries, failures, the largest
//   free range. (Native cudaMalloc failures are not told apart by the
//   ledger, so the rule reads the VMM allocator's figures only.)
//
// Both cost the host's blocked time; each is charged the allocation idle
// (Note [Each idle second charged once] in findings/idle_ledger.h: first,
// and never both, since one needs the native allocator and the other
// allocator:vmm).
#include <algorithm>
#include <cinttypes>

#include "findings/figures.h"
#include "findings/findings.h"

namespace gpuslack {
namespace findings {
namespace {

// The calls of the native allocator that may wait for the whole device.
constexpr const char* kSyncingAllocCalls[] = {"cudaFree", "cudaMalloc", "cuMemFree_v2", "cuMemAlloc_v2"};

// fragmentation: peak reserved this many times peak allocated is "far above".
constexpr double kFarAbove = 2.0;

void allocator_sync(const report::Summary& s, const Context& c, IdleLedger* idle, std::vector<report::Finding>* out) {
  if (!s.allocator.empty()) return;  // allocator:vmm served the device: its frees do not synchronize
  double total = 0, steady = 0;
  std::vector<std::pair<std::string, std::string>> evidence;
  for (const char* name : kSyncingAllocCalls) {
    const report::CallRow* row = call_row(s, name);
    if (row == nullptr || row->steady_s <= 0) continue;
    total += row->total_s;
    steady += row->steady_s;
    evidence.emplace_back(std::string(name) + " calls",
                          std::to_string(row->count) + ", " + seconds_text(row->total_s) + " blocked (longest " +
                              seconds_text(row->max_s) + ")");
  }
  if (!worth_reporting(steady, s.wall_s)) return;
  report::Finding f;
  f.rule = "allocator_sync";
  f.title = "cudaFree/cudaMalloc wait for the whole GPU in steady state";
  set_cost(&f, total, s.wall_s);
  f.gpu_idle_s = idle->charge_all(timeline::Idle::kAllocation);
  f.evidence = std::move(evidence);
  f.evidence.emplace_back("in steady state (the run's middle 80%)", seconds_text(steady));
  f.where = sites_of(s, Category::kAllocation, {"cudaFree", "cudaMalloc", "cuMemFree_v2", "cuMemAlloc_v2"});
  if (s.allocator_status.selected == "vmm") {
    const std::string why = s.allocator_status.off.empty() ? "it served no device" : s.allocator_status.off[0].why;
    f.evidence.emplace_back("allocator:vmm", "selected, off: " + why);
    f.fix = "none through gpuslack's allocator: allocator:vmm is already selected but off (" + why +
            "); it needs a driver and device with CUDA virtual memory management. Meanwhile free less: keep "
            "device buffers and reuse them across steps" +
            std::string(c.pytorch ? " (and no torch.cuda.empty_cache() in the loop)" : "");
  } else if (c.pytorch) {
    f.fix = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch's cache then grows without "
            "cudaFree), or gpuslack.torch.use() with GPUSLACK_CONF=allocator:vmm";
  } else {
    f.fix = "GPUSLACK_CONF=allocator:vmm (gpuslack's allocator frees without waiting for the device)";
  }
  out->push_back(std::move(f));
}

void fragmentation(const report::Summary& s, IdleLedger* idle, std::vector<report::Finding>* out) {
  double stall = 0;
  uint64_t retries = 0, failures = 0, peak_allocated = 0, peak_reserved = 0, largest_free = 0;
  for (const report::AllocatorRow& a : s.allocator) {
    stall += a.stats.stall_s;
    retries += a.stats.oom_retries;
    failures += a.stats.failed_allocations;
    peak_allocated += a.stats.peak_allocated;
    peak_reserved += a.stats.peak_reserved;
    largest_free = std::max(largest_free, a.stats.largest_free);
  }
  const bool far_above = peak_allocated > 0 && static_cast<double>(peak_reserved) >= kFarAbove * peak_allocated;
  if (!(retries > 0 || failures > 0 || far_above)) return;
  if (!worth_reporting(stall, s.wall_s)) return;
  report::Finding f;
  f.rule = "fragmentation";
  f.title = "device memory runs short: allocations wait for frees under pressure";
  set_cost(&f, stall, s.wall_s);
  f.gpu_idle_s = idle->charge_all(timeline::Idle::kAllocation);
  char ratio[32];
  std::snprintf(ratio, sizeof(ratio), "%.1fx", peak_allocated ? static_cast<double>(peak_reserved) / peak_allocated : 0);
  f.evidence.emplace_back("peak reserved / peak allocated",
                          bytes_text(static_cast<double>(peak_reserved)) + " / " +
                              bytes_text(static_cast<double>(peak_allocated)) + " (" + ratio + ")");
  f.evidence.emplace_back("out-of-memory retries", std::to_string(retries));
  f.evidence.emplace_back("failed allocations", std::to_string(failures));
  f.evidence.emplace_back("largest free range", bytes_text(static_cast<double>(largest_free)));
  f.evidence.emplace_back("waiting for pending frees", seconds_text(stall));
  f.where = sites_of(s, Category::kAllocation, {"cudaMalloc", "cudaMallocAsync", "cuMemAlloc_v2"});
  f.fix = "lower the peak (smaller batches, free what the next step no longer needs before it allocates), "
          "and allocate fewer distinct sizes (round them up) so that freed blocks fit the next requests";
  out->push_back(std::move(f));
}

}  // namespace

void allocator_rules(const report::Summary& s, const Context& c, IdleLedger* idle, std::vector<report::Finding>* out) {
  allocator_sync(s, c, idle, out);
  fragmentation(s, idle, out);
}

}  // namespace findings
}  // namespace gpuslack
