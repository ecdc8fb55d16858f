#include "report/collectives.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "config/environment.h"
#include "report/algorithms_text.h"
#include "report/nccl_env.h"
#include "report/summary.h"
#include "report/text_parts.h"
#include "report/units.h"

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

// The text.

namespace {

std::string nccl_version_text(int code) {
  if (code <= 0) return "unknown";
  // NCCL_VERSION(X,Y,Z): X*10000 + Y*100 + Z since 2.9 (X*1000 + Y*100 + Z before).
  if (code >= 10000) return printf_string("%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
  return printf_string("%d.%d.%d", code / 1000, code / 100 % 10, code % 100);
}


// Note: the GPU columns come from one call in `timing_every` (docs/collectives.md).
}  // namespace

void collectives_text(const CollectivesSection& c, std::string* out) {
  if (!c.present) return;
  const std::string host = over_wall(c.host_share) ? thread_seconds(c.host_s)  // Note [Thread-seconds]
                                                  : headline_seconds(c.host_s) + " (" + percent_text(c.host_share) + " of wall)";
  // Note [Estimated GPU time] (collectives.h): an estimate, from so many
  // timed calls; over several devices a share of their wall time together
  // (never past 100%: the estimate is capped there).
  const int devices = std::max(1, c.gpu_estimate_devices);
  const std::string gpu_share = devices > 1 ? percent_text(c.gpu_share / devices) + " of " + std::to_string(devices) +
                                                  " devices x wall"
                                            : percent_text(c.gpu_share) + " of wall";
  line(out, "collectives: NCCL " + nccl_version_text(c.nccl_version) + ", host " + host + ", GPU ~" +
                headline_seconds(c.gpu_s_estimated) + " (" + gpu_share + (c.gpu_estimate_capped ? ", capped" : "") +
                "), estimated from " + count_text(c.gpu_estimate_timed) + " timed calls (1 in " +
                std::to_string(c.timing_every) + ")");
  for (const std::string& w : c.warnings) line(out, "  warning: " + printable(w));
  if (!c.rows.empty()) {
    Table table(6);
    table.add({"op", "type", "size", "ranks", "NCCL", "count", "captured", "bytes", "host", "GPU", "GPU p50",
               "GPU p99", "algbw GB/s", "busbw GB/s"});
    for (const CollectiveRow& r : c.rows) {
      table.add({printable(r.op), printable(r.datatype), size_bucket_text(r.bucket),
                 r.nranks > 0 ? std::to_string(r.nranks) : "?",
                 r.algo.empty() ? "-" : printable(r.algo + "/" + r.proto), count_text(r.count), count_text(r.captured),
                 bytes_cell(r.bytes), seconds_text(r.host_s), r.timed > 0 ? seconds_text(r.gpu_s) : "-",
                 r.timed > 0 ? seconds_text(r.gpu_p50_s) : "-", r.timed > 0 ? seconds_text(r.gpu_p99_s) : "-",
                 r.mostly_captured ? "-" : gbps_text(r.algbw_gbps), r.mostly_captured ? "-" : gbps_text(r.busbw_gbps)});
    }
    table.render("  ", out);
    // Note [Captured collectives] (collectives.h).
    for (const CollectiveRow& r : c.rows) {
      if (r.captured == 0) continue;
      line(out, "  " + printable(r.op) + " " + printable(r.datatype) + " " +
                    size_bucket_text(r.bucket) + ": " + count_text(r.captured) + " of " +
                    count_text(r.count) + " calls captured in CUDA graphs, not timed" +
                    (r.mostly_captured ? "; no algbw/busbw" : ""));
    }
    // The cost model's expectation per row (report/collective_expectations.h),
    // then where its links came from, each source once.
    std::vector<std::string> sources;
    for (const CollectiveRow& r : c.rows) {
      if (r.expected_busbw_gbps <= 0 && r.best_time_s <= 0) continue;
      std::string l = "  expected: " + printable(r.op) + " " + printable(r.datatype) + " " +
                      size_bucket_text(r.bucket) + ": " + gbps_text(r.expected_busbw_gbps) +
                      " GB/s busbw";
      if (r.best_time_s > 0) {
        l += "; best " + printable(r.best_algo) + "/" + printable(r.best_proto) + " " + seconds_text(r.best_time_s) +
             " a call";
        if (r.chosen_time_s > 0) l += " against " + seconds_text(r.chosen_time_s) + " by NCCL's choice";
      }
      line(out, l);
      if (std::find(sources.begin(), sources.end(), r.expected_from) == sources.end())
        sources.push_back(r.expected_from);
    }
    for (const std::string& from : sources) line(out, "  expected from: " + printable(from));
  }
  std::string comms;
  for (const CommunicatorRow& m : c.communicators) {
    if (!comms.empty()) comms += ", ";
    comms += "rank " + std::to_string(m.rank) + "/" + std::to_string(m.nranks) + " on device " +
             std::to_string(m.device) + (m.aborted ? " (aborted)" : "");
  }
  if (!comms.empty()) line(out, "  communicators: " + comms);
  for (const std::string& l : algorithm_lines(c)) line(out, "  " + l);
  std::string env;
  for (const auto& [k, v] : c.env) env += (env.empty() ? "" : " ") + printable(k) + "=" + printable(v);
  if (!env.empty()) line(out, "  environment: " + env);
  if (c.pending > 0 || c.dropped > 0)
    line(out, "  timed calls still running: " + count_text(c.pending) + ", lost to failed events: " +
                  count_text(c.dropped));
}

}  // namespace report
}  // namespace gpuslack
