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

}  // namespace

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
    r.gpu_p50_s = finite(f.gpu_ns.percentile(0.50) * 1e-9);
    r.gpu_p99_s = finite(f.gpu_ns.percentile(0.99) * 1e-9);
    r.mostly_captured = f.captured > 0 && f.captured * 2 > f.count;  // Note [Captured collectives]
    if (r.gpu_s > 0 && !r.mostly_captured) {
      r.algbw_gbps = finite(static_cast<double>(f.timed_bytes) / r.gpu_s / 1e9);
      r.busbw_gbps = finite(r.algbw_gbps * nccl::bus_factor(f.op, f.nranks));
    }
    c.host_s += r.host_s;
    // Uncaptured calls stand for themselves in proportion to the timed ones.
    uint64_t timeable = f.count - f.captured;
    if (f.timed > 0) c.gpu_s_estimated += r.gpu_s * static_cast<double>(timeable) / static_cast<double>(f.timed);
    c.rows.push_back(std::move(r));
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
