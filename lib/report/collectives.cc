#include "report/collectives.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "config/environment.h"
#include "report/nccl_env.h"

namespace gpuslack {
namespace report {
namespace {

double finite(double v) { return std::isfinite(v) && v > 0 ? v : 0; }

// Calls this many gpu_ns buckets or more above the median's are outliers.
constexpr int kOutlierBuckets = 3;

// Devices of this process's communicators, at least 1.
int devices_driven(const std::vector<nccl::CommRow>& comms) {
  std::vector<int> seen;
  for (const nccl::CommRow& m : comms)
    if (m.device >= 0 && std::find(seen.begin(), seen.end(), m.device) == seen.end()) seen.push_back(m.device);
  return std::max<int>(1, static_cast<int>(seen.size()));
}

}  // namespace

namespace {

// The timed calls within kOutlierBuckets of the median bucket: their GPU
// time (ns) and count, against every timed call's.
struct Typical {
  double ns = 0, all_ns = 0;
  uint64_t calls = 0, all = 0;
};

Typical typical_of(const nccl::CollectiveFigures& f) {
  Typical t;
  t.all = f.gpu_ns.total();
  if (f.timed == 0 || t.all == 0) return t;
  int median = 0;
  for (uint64_t seen = 0; median < ledger::Histogram::kBuckets; ++median) {
    seen += f.gpu_ns.counts[median];
    if (2 * seen >= t.all) break;
  }
  for (int b = 0; b < ledger::Histogram::kBuckets; ++b) {
    t.all_ns += f.gpu_ns_sums[b];
    if (b >= median + kOutlierBuckets) continue;
    t.ns += f.gpu_ns_sums[b];
    t.calls += f.gpu_ns.counts[b];
  }
  return t;
}

}  // namespace

double typical_call_s(const nccl::CollectiveFigures& f) {
  const Typical t = typical_of(f);
  return t.calls > 0 ? finite(t.ns * 1e-9 / static_cast<double>(t.calls)) : 0;
}

double estimate_gpu_s(const nccl::CollectiveFigures& f) {
  if (f.timed == 0 || f.gpu_ns.total() == 0) return 0;
  uint64_t timeable = f.count - std::min(f.count, f.captured);
  uint64_t untimed = timeable > f.timed ? timeable - f.timed : 0;
  return finite(f.gpu_s + static_cast<double>(untimed) * typical_call_s(f));
}

CollectivesSection build_collectives(const RunInfo& run, double tick_s, double wall_s) {
  CollectivesSection c;
  const nccl::CollectiveSnapshot& snap = run.collectives;
  c.present = !snap.rows.empty() || !run.communicators.empty() || !run.profiler.rows.empty();
  if (!c.present) return c;
  c.nccl_version = run.nccl_version;
  c.timing_every = std::max(1, run.collective_timing_every);
  c.pending = snap.pending;
  c.dropped = snap.dropped;
  for (const nccl::CollectiveFigures& f : snap.rows) {
    CollectiveRow r;
    r.op = nccl::collective_op_name(f.op);
    r.datatype = nccl::datatype_name(f.datatype);
    r.bucket = f.bucket;
    r.nranks = f.nranks;
    r.count = f.count;
    r.captured = f.captured;
    r.timed = f.timed;
    r.bytes = f.bytes;
    r.host_s = finite(static_cast<double>(f.host_ticks) * tick_s);
    r.gpu_s = finite(f.gpu_s);
    r.gpu_s_estimated = estimate_gpu_s(f);
    r.gpu_typical_s = typical_call_s(f);
    r.gpu_p50_s = finite(f.gpu_ns.percentile(0.50) * 1e-9);
    r.gpu_p99_s = finite(f.gpu_ns.percentile(0.99) * 1e-9);
    r.mostly_captured = f.captured > 0 && f.captured * 2 > f.count;  // Note [Captured collectives]
    if (f.bw_s > 0 && !r.mostly_captured) {  // Note [Charged time and bandwidth time] (nccl/collectives.h)
      // The slow outliers' share of the time and of the calls is left out
      // (Note [Bandwidth without the outliers] in collectives.h).
      const Typical t = typical_of(f);
      const double time_kept = t.all_ns > 0 && t.ns > 0 ? t.ns / t.all_ns : 1;
      const double calls_kept = t.all > 0 && t.calls > 0 ? static_cast<double>(t.calls) / static_cast<double>(t.all) : 1;
      const double bw_s = f.bw_s * time_kept;
      double timed_bytes = static_cast<double>(f.timed_bytes) * calls_kept;
      r.algbw_gbps = finite(timed_bytes / bw_s / 1e9);
      r.busbw_gbps = finite(
          nccl::bus_bytes(f.op, f.nranks, timed_bytes, static_cast<double>(f.timed_local_bytes) * calls_kept) / bw_s /
          1e9);
    }
    c.host_s += r.host_s;
    c.gpu_s_estimated += r.gpu_s_estimated;
    c.gpu_estimate_timed += r.timed;
    c.rows.push_back(std::move(r));
  }
  // See Note [Estimated GPU time]: never more GPU time than the devices had.
  c.gpu_estimate_devices = devices_driven(run.communicators);
  const double most = c.gpu_estimate_devices * wall_s;
  if (wall_s > 0 && c.gpu_s_estimated > most) {
    double scale = most / c.gpu_s_estimated;
    for (CollectiveRow& r : c.rows) r.gpu_s_estimated *= scale;
    c.gpu_s_estimated = most;
    c.gpu_estimate_capped = true;
  }
  c.host_share = wall_s > 0 ? finite(c.host_s / wall_s) : 0;
  c.gpu_share = wall_s > 0 ? finite(c.gpu_s_estimated / wall_s) : 0;
  std::stable_sort(c.rows.begin(), c.rows.end(), [](const CollectiveRow& a, const CollectiveRow& b) {
    return a.host_s + a.gpu_s > b.host_s + b.gpu_s;
  });
  for (const nccl::CommRow& m : run.communicators)
    c.communicators.push_back({m.nranks, m.rank, m.device, m.alive, m.aborted});
  add_algorithms(run, &c);
  c.env = nccl_variables(environment_block());  // Note [NCCL variables]; none in a secure process
  if (run.expected_busbw_gbps > 0) {
    std::vector<std::string> warned;
    std::vector<const CollectiveRow*> large;
    for (const CollectiveRow& r : c.rows)
      if (r.bucket >= kLargeBucket && r.timed > 0 && r.nranks > 1 && !r.mostly_captured) large.push_back(&r);
    std::stable_sort(large.begin(), large.end(),
                     [](const CollectiveRow* a, const CollectiveRow* b) { return a->bucket > b->bucket; });
    for (const CollectiveRow* r : large) {
      if (r->busbw_gbps >= 0.5 * run.expected_busbw_gbps) continue;
      if (std::find(warned.begin(), warned.end(), r->op) != warned.end()) continue;
      warned.push_back(r->op);
      c.warnings.push_back(absl::StrFormat("%s ran at %.1f GB/s bus bandwidth, expected %.1f", r->op, r->busbw_gbps,
                                           run.expected_busbw_gbps));
    }
  }
  return c;
}

}  // namespace report
}  // namespace gpuslack
