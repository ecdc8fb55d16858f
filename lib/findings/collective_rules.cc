// The collective rules (lib/findings/findings.h):
//
// collective_bandwidth: large collectives (report::kLargeBucket, 64 MiB or
//   more per call, where latency no longer matters) whose timed calls ran
//   below half the bus bandwidth expected of the communicator's link
//   (fabric.h, Note [Where the expected bandwidth comes from]). Cost: the
//   GPU time of those calls (the row's estimate over every uncaptured call,
//   per rank where this process drives several GPUs) beyond what the
//   expected bandwidth would take. Evidence: the slowest
//   such row's figures, the link expected, the communicator's shape and the
//   NCCL_ALGO/NCCL_PROTO in force; the fix names what to try there.
//   It supersedes the section's warning (report/collectives.h) as advice;
//   the warning stays as the section's raw flag, the same rows and
//   threshold, for the job report, which merges it across ranks.
//
//   With a known topology (report/collective_expectations.h) each row
//   carries its own expectation, the cost model's for the algorithm and
//   protocol NCCL used: the rule needs no knob then.
//
// collective_algorithm: rows whose calls the cost model says another
//   algorithm or protocol (or NCCL's channel count raised) would finish at
//   least kBetterChoice times sooner than NCCL's choice did
//   (CollectiveRow::chosen_time_s against best_time_s). Cost: the measured
//   GPU time of those calls, per rank, each at most as it usually runs
//   (gpu_typical_s: a first call's setup or a late peer's wait is no
//   algorithm's to recover) and at most the model's time for NCCL's choice,
//   less the model's time for the better choice (Note [What another
//   algorithm recovers]). Evidence: sizes, shape, what NCCL chose, measured and expected
//   bus bandwidth for both. Fix: environment lines (NCCL_ALGO, NCCL_PROTO,
//   NCCL_MIN_NCHANNELS where channels limit it), to be set on every rank
//   alike (NCCL needs every rank to make the same choice; the job report
//   checks that the ranks' fixes agree). Rows grouped by the fix; the fix
//   recovering most is the finding.
//
// Note [The GPU's time]: both rules cost GPU time, never host time: the
// timed calls' GPU time scaled to every call, and, where the GPU timeline
// measured, no more than the communication time it saw on this rank's GPUs.
// Each second of a row's GPU time is charged once (as GPU idle is: Note
// [Each idle second charged once] in findings/idle_ledger.h), in this
// order: collective_bandwidth, when it fires, the time beyond the row's
// expected bandwidth (its fix, the links, brings the row to it);
// latency_bound_collectives, when it fires, its small rows (merging them
// changes the calls, and so their best choice); collective_algorithm what
// is left of a row past the better choice's time: of a row the bandwidth
// rule charged, the time at the expected bandwidth less the better
// choice's, never the same seconds twice.
//
// Note [What another algorithm recovers]: collective_algorithm claims a
// row's time only up to the model's time for NCCL's own choice. Past it the
// calls wait on something the algorithm does not change: a peer that
// reaches the call late each step (a synchronous loop's ranks drift by
// their hosts' jitter), a link shared with other traffic. Claiming that too
// overstated the recovery: issue 26's field-report job (8 ranks on two
// cores) measured Ring at 27.7 ms a call against the model's 23.6 and Tree,
// after the fix, at 10.6 against 7.4, the same few ms of late peers on both
// sides, so the fix recovered 78-81% of an estimate that counted them
// (scripts/collectives_compare.py). A row slower than its expected
// bandwidth is collective_bandwidth's past that (above); one between the
// model and half its bandwidth is left unexplained, not claimed.
//
// latency_bound_collectives: many small calls (under 1 MiB each) whose GPU
//   time is mostly the per-call latency and at least half of all
//   collective GPU time. Latency per call: the median GPU time of the
//   smallest timed row; cost: that latency times the calls (per rank) that merging
//   into 25 MiB buckets (DDP's default bucket_cap_mb) would save.
//
// Both fire only on timed calls and past the thresholds every finding meets
// (figures.h, Note [Finding thresholds]).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "findings/fabric.h"
#include "findings/figures.h"
#include "findings/findings.h"
#include "report/collective_expectations.h"
#include "report/collectives.h"

namespace gpuslack {
namespace findings {
namespace {

inline constexpr double kSlowFraction = 0.5;  // below this share of the expected busbw
inline constexpr double kBetterChoice = 1.3;  // the better choice at least this many times sooner
inline constexpr int kSmallBucket = 20;       // calls under 2^20 bytes (1 MiB) are small
inline constexpr uint64_t kManyCalls = 100;   // small calls, at least
inline constexpr double kMergedBucketBytes = 25.0 * (1 << 20);  // DDP's default bucket_cap_mb

std::string env_value(const report::CollectivesSection& c, const char* name) {
  for (const auto& kv : c.env)
    if (kv.first == name) return kv.second;
  return "unset";
}

// The ranks of communicators of `nranks` this process holds (one per
// device it drives): their GPUs run the calls side by side.
int ranks_here(const report::Summary& s, int nranks) {
  int here = 0;
  for (const report::CommunicatorRow& c : s.collectives.communicators)
    if (c.nranks == nranks) ++here;
  return std::max(1, here);
}

// GPU time of every uncaptured call of the row, per rank of this process
// (the row sums the calls of every rank here): the section's estimate
// (Note [Estimated GPU time] in report/collectives.h), the one figure.
double gpu_estimated(const report::Summary& s, const report::CollectiveRow& r) {
  return r.gpu_s_estimated / ranks_here(s, r.nranks);
}

// See Note [The GPU's time]: the share of the event-timed estimate the GPU
// timeline confirms (1 when it did not measure, or saw as much).
double timeline_scale(const report::Summary& s) {
  if (s.gpu_timeline.status != timeline::Status::kMeasured || s.gpu_timeline.devices.empty()) return 1;
  double comm = 0;
  for (const report::GpuDeviceRow& d : s.gpu_timeline.devices)
    comm += d.busy_by[static_cast<int>(timeline::Busy::kCommunication)];
  comm /= static_cast<double>(s.gpu_timeline.devices.size());  // per rank: one GPU each
  double estimated = 0;
  for (const report::CollectiveRow& r : s.collectives.rows) estimated += gpu_estimated(s, r);
  return estimated > comm && estimated > 0 ? comm / estimated : 1;
}

std::string row_text(const report::CollectiveRow& r) {
  return absl::StrFormat("%s %s, %s-%s per call, %d ranks", r.op, r.datatype, bytes_text(std::ldexp(1.0, r.bucket)),
                         bytes_text(std::ldexp(1.0, r.bucket + 1)), r.nranks);
}

std::vector<std::vector<std::string>> collective_sites(const report::Summary& s) {
  std::vector<std::vector<std::string>> where;
  for (const report::CallSiteRow& site : s.call_sites)
    if (site.category == Category::kCollective && !site.frames.empty() && where.size() < 3)
      where.push_back(site.frames);
  return where;
}

std::string bandwidth_fix(const std::string& algo, const std::string& proto, Span span) {
  std::string fix;
  if (algo != "unset")
    fix = "NCCL_ALGO=" + algo + " is set: try without it (NCCL picks per size) and with the other of Ring/Tree. ";
  else if (span == Span::kWithinNode)
    fix = "Try NCCL_ALGO=Ring and NCCL_ALGO=Tree against NCCL's choice (nccl-tests at this size). ";
  else
    fix = "Try NCCL_ALGO=Tree (across nodes, where NVLink is far faster than the network) and NCCL_ALGO=Ring. ";
  if (proto != "unset") fix += "NCCL_PROTO=" + proto + " is set: try without it. ";
  fix += "Raise NCCL_MIN_NCHANNELS (e.g. 16, 32) if NCCL_DEBUG=INFO shows few channels; ";
  if (span == Span::kWithinNode)
    fix += "check that it says P2P over NVLink (not SHM) and that NCCL_P2P_DISABLE is unset (nvidia-smi topo -m).";
  else
    fix += "check that it says NET/IB with GPUDirect RDMA (not NET/Socket) and that NCCL_IB_HCA names the NICs "
           "next to each GPU.";
  return fix;
}

// Seconds of one row's GPU time a finding was charged (Note [The GPU's time]).
using ChargedRows = std::vector<std::pair<const report::CollectiveRow*, double>>;

double charged_to(const ChargedRows& rows, const report::CollectiveRow& r) {
  double s = 0;
  for (const auto& [row, seconds] : rows)
    if (row == &r) s += seconds;
  return s;
}

// Fills `charged` with the rows it costs, only when it fires.
void collective_bandwidth(const report::Summary& s, const Context& ctx, ChargedRows* charged,
                          std::vector<report::Finding>* out) {
  ChargedRows rows;
  Fabric fabric;
  std::string error;
  if (!parse_fabric(ctx.fabric, &fabric, &error)) fabric = Fabric{};
  double cost = 0;
  const report::CollectiveRow* worst = nullptr;
  double worst_ratio = 1, worst_expected = 0;
  std::string worst_source;
  Span worst_span = Span::kUnknown;
  uint64_t slow_calls = 0;
  const double scale = timeline_scale(s);
  for (const report::CollectiveRow& r : s.collectives.rows) {
    if (r.bucket < report::kLargeBucket || r.timed == 0 || r.nranks <= 1 || r.busbw_gbps <= 0) continue;
    Span span = span_of(s, r.nranks);
    std::string source;
    double expected = 0;
    nccl::Shape shape;
    std::string shape_from;
    if (r.expected_busbw_gbps > 0) {  // the row's own (report/collective_expectations.h)
      expected = r.expected_busbw_gbps;
      source = r.expected_from;
      if (report::communicator_shape(s, r, &shape, &shape_from))
        span = shape.nodes > 1 ? Span::kAcrossNodes : Span::kWithinNode;
    } else {
      expected = expected_busbw(ctx.expected_busbw_gbps, fabric, span, &source);
    }
    if (expected <= 0) continue;
    double ratio = r.busbw_gbps / expected;
    if (ratio >= kSlowFraction) continue;
    const double beyond = gpu_estimated(s, r) * scale * (1 - ratio);
    cost += beyond;
    rows.emplace_back(&r, beyond);
    slow_calls += (r.count - std::min(r.count, r.captured)) / ranks_here(s, r.nranks);
    if (!worst || ratio < worst_ratio) {
      worst = &r;
      worst_ratio = ratio;
      worst_expected = expected;
      worst_source = source;
      worst_span = span;
    }
  }
  if (!worst || !worth_reporting(cost, s.wall_s)) return;
  const std::string algo = env_value(s.collectives, "NCCL_ALGO");
  const std::string proto = env_value(s.collectives, "NCCL_PROTO");
  report::Finding f;
  f.rule = "collective_bandwidth";
  f.title = absl::StrFormat("%s ran at %.0f%% of the bus bandwidth expected", worst->op, worst_ratio * 100);
  f.cost_s = cost;
  f.cost_share = std::min(1.0, cost / s.wall_s);
  f.evidence = {
      {"slowest", row_text(*worst)},
      {"bus bandwidth", absl::StrFormat("%.1f GB/s (%llu of %llu calls timed)", worst->busbw_gbps,
                                        static_cast<unsigned long long>(worst->timed),
                                        static_cast<unsigned long long>(worst->count))},
      {"expected", absl::StrFormat("%.0f GB/s (%s)", worst_expected, worst_source)},
      {"communicator", span_text(worst_span)},
      {"large calls below half of it, per rank", absl::StrFormat("%llu", static_cast<unsigned long long>(slow_calls))},
      {"NCCL_ALGO", algo},
      {"NCCL_PROTO", proto},
  };
  std::string channels = env_value(s.collectives, "NCCL_MIN_NCHANNELS");
  if (channels != "unset") f.evidence.emplace_back("NCCL_MIN_NCHANNELS", channels);
  f.where = collective_sites(s);
  f.fix = bandwidth_fix(algo, proto, worst_span);
  out->push_back(std::move(f));
  *charged = std::move(rows);
}

// Fills `charged` with the small rows it judged, only when it fires.
void latency_bound(const report::Summary& s, const Context& ctx, ChargedRows* charged,
                   std::vector<report::Finding>* out) {
  ChargedRows rows;
  double all_gpu = 0, small_gpu = 0, small_bytes = 0;
  uint64_t small_calls = 0;
  double latency = 0;
  int smallest = 1 << 30;
  for (const report::CollectiveRow& r : s.collectives.rows) {
    double g = gpu_estimated(s, r);
    all_gpu += g;
    if (r.bucket >= kSmallBucket || r.timed == 0) continue;
    uint64_t calls = (r.count - std::min(r.count, r.captured)) / ranks_here(s, r.nranks);
    small_gpu += g;
    small_calls += calls;
    rows.emplace_back(&r, g);
    small_bytes += static_cast<double>(r.bytes) * static_cast<double>(calls) / static_cast<double>(r.count);
    if (r.bucket < smallest && r.gpu_p50_s > 0) {
      smallest = r.bucket;
      latency = r.gpu_p50_s;
    }
  }
  if (small_calls < kManyCalls || latency <= 0 || s.wall_s <= 0) return;
  if (small_gpu < 0.5 * all_gpu) return;                                  // small calls dominate
  if (latency * static_cast<double>(small_calls) < 0.5 * small_gpu) return;  // mostly latency
  double merged = std::ceil(small_bytes / kMergedBucketBytes);
  double cost = latency * (static_cast<double>(small_calls) - merged);
  if (!worth_reporting(cost, s.wall_s)) return;
  report::Finding f;
  f.rule = "latency_bound_collectives";
  f.title = "Many small collectives spend their time in per-call latency";
  f.cost_s = cost;
  f.cost_share = std::min(1.0, cost / s.wall_s);
  f.evidence = {
      {"calls under 1 MiB, per rank", absl::StrFormat("%llu, %s in all", static_cast<unsigned long long>(small_calls),
                                            bytes_text(small_bytes))},
      {"their share of collective GPU time", absl::StrFormat("%.0f%%", all_gpu > 0 ? 100 * small_gpu / all_gpu : 0)},
      {"latency per call", absl::StrFormat("%.1f us (median of the smallest)", latency * 1e6)},
      {"calls in 25 MiB buckets", absl::StrFormat("%.0f", merged)},
  };
  f.where = collective_sites(s);
  f.fix = ctx.pytorch
              ? "Send fewer, larger collectives: DDP's bucket_cap_mb (25 by default) larger, "
                "DistributedDataParallel(model, bucket_cap_mb=100); FSDP/ZeRO: larger buckets or fewer, larger groups."
              : "Send fewer, larger collectives: pack small tensors into one buffer per call (buckets of tens of MiB), "
                "or group them with ncclGroupStart/ncclGroupEnd.";
  out->push_back(std::move(f));
  *charged = std::move(rows);
}


// What NCCL chose for a row: its profiler's word, else NCCL_ALGO/NCCL_PROTO
// (the expectation took them only when each names one choice).
std::string chosen_algo(const report::Summary& s, const report::CollectiveRow& r) {
  return !r.algo.empty() ? r.algo : env_value(s.collectives, "NCCL_ALGO");
}
std::string chosen_proto(const report::Summary& s, const report::CollectiveRow& r) {
  return !r.proto.empty() ? r.proto : env_value(s.collectives, "NCCL_PROTO");
}

// collective_algorithm (the header's comment). A row's better choice and
// the environment lines that make NCCL take it.
struct AlgorithmFix {
  std::string lines;  // "NCCL_ALGO=Tree NCCL_PROTO=Simple"
  double cost = 0;    // GPU time it would recover, per rank
  uint64_t calls = 0;
  const report::CollectiveRow* worst = nullptr;  // the row recovering most
  double worst_saving = 0;
};

// The lines for row `r`'s best choice; "" when none would change what NCCL
// does. Channels only where the choice stays and NCCL's channel count is
// what makes it slower (chosen_time_s assumed NCCL's count, best_time_s
// the model's own: best_channels).
std::string fix_lines(const report::CollectiveRow& r, const std::string& algo, const std::string& proto) {
  std::string out;
  if (r.best_algo != algo) out = "NCCL_ALGO=" + r.best_algo;
  if (r.best_proto != proto) out += (out.empty() ? "" : " ") + std::string("NCCL_PROTO=") + r.best_proto;
  if (out.empty() && r.channels > 0 && r.best_channels > std::lround(r.channels))
    out = absl::StrFormat("NCCL_MIN_NCHANNELS=%d", r.best_channels);
  return out;
}

// `slow` and `small`: the rows collective_bandwidth and latency_bound were
// charged (Note [The GPU's time]).
void collective_algorithm(const report::Summary& s, const Context&, const ChargedRows& slow, const ChargedRows& small,
                          std::vector<report::Finding>* out) {
  const double scale = timeline_scale(s);
  std::vector<AlgorithmFix> fixes;
  for (const report::CollectiveRow& r : s.collectives.rows) {
    if (r.timed == 0 || r.nranks <= 1 || r.mostly_captured || r.count == 0) continue;
    if (r.chosen_time_s <= 0 || r.best_time_s <= 0) continue;           // NCCL's choice or the links unknown
    if (r.chosen_time_s < kBetterChoice * r.best_time_s) continue;      // not enough sooner
    if (charged_to(small, r) > 0) continue;                             // latency_bound's
    std::string lines = fix_lines(r, chosen_algo(s, r), chosen_proto(s, r));
    if (lines.empty()) continue;
    const uint64_t calls = (r.count - std::min(r.count, r.captured)) / ranks_here(s, r.nranks);
    // Each call as it usually runs (gpu_typical_s): no choice of algorithm
    // recovers a first call's setup or a late peer's wait.
    double measured = gpu_estimated(s, r);
    if (r.gpu_typical_s > 0) measured = std::min(measured, r.gpu_typical_s * static_cast<double>(calls));
    measured *= scale;
    // Less what collective_bandwidth was charged: the time beyond the expected bandwidth. And at most the
    // model's time for NCCL's choice: what runs past it (a peer that arrives late each step, a shared link)
    // stays whichever algorithm runs (Note [What another algorithm recovers]).
    const double nccls = std::min(measured - charged_to(slow, r), r.chosen_time_s * static_cast<double>(calls));
    const double saving = nccls - r.best_time_s * static_cast<double>(calls);
    if (saving <= 0) continue;
    auto it = std::find_if(fixes.begin(), fixes.end(), [&](const AlgorithmFix& f) { return f.lines == lines; });
    if (it == fixes.end()) it = fixes.insert(fixes.end(), AlgorithmFix{lines});
    it->cost += saving;
    it->calls += calls;
    if (!it->worst || saving > it->worst_saving) it->worst = &r, it->worst_saving = saving;
  }
  if (fixes.empty()) return;
  const AlgorithmFix& fix = *std::max_element(
      fixes.begin(), fixes.end(), [](const AlgorithmFix& a, const AlgorithmFix& b) { return a.cost < b.cost; });
  if (!worth_reporting(fix.cost, s.wall_s)) return;
  const report::CollectiveRow& w = *fix.worst;
  const double bytes = static_cast<double>(w.bytes) / static_cast<double>(w.count);
  nccl::CollectiveOp op = nccl::CollectiveOp::kAllReduce;
  report::collective_op_of(w.op, &op);
  const double factor = nccl::bus_factor(op, w.nranks);
  nccl::Shape shape;
  std::string shape_from;
  std::string shape_text = report::communicator_shape(s, w, &shape, &shape_from)
                               ? absl::StrFormat("%d node%s x %d ranks (%s)", shape.nodes, shape.nodes == 1 ? "" : "s",
                                                 shape.ranks_per_node, shape_from)
                               : std::string("unknown");
  report::Finding f;
  f.rule = "collective_algorithm";
  const std::string algo = chosen_algo(s, w), proto = chosen_proto(s, w);
  // Where only channels differ, the title names them, not the same pair twice.
  f.title = w.best_algo == algo && w.best_proto == proto
                ? absl::StrFormat("%s would finish %.1fx sooner with %d channels than NCCL's %.0f", w.op,
                                  w.chosen_time_s / w.best_time_s, w.best_channels, w.channels)
                : absl::StrFormat("%s would finish %.1fx sooner by %s/%s than by NCCL's %s/%s", w.op,
                                  w.chosen_time_s / w.best_time_s, w.best_algo, w.best_proto, algo, proto);
  f.cost_s = fix.cost;
  f.cost_share = std::min(1.0, fix.cost / s.wall_s);
  const double measured_call =
      w.gpu_typical_s > 0 ? w.gpu_typical_s : w.timed > 0 ? w.gpu_s / static_cast<double>(w.timed) : 0;
  f.evidence = {
      {"largest", row_text(w)},
      {"communicator", shape_text},
      {"NCCL chose", absl::StrFormat("%s/%s%s", algo, proto,
                                     w.channels > 0 ? absl::StrFormat(", %.0f channels", w.channels) : "")},
      {"measured", absl::StrFormat("%s per call, %.1f GB/s bus bandwidth (%llu of %llu calls timed)",
                                   seconds_text(measured_call), w.busbw_gbps,
                                   static_cast<unsigned long long>(w.timed), static_cast<unsigned long long>(w.count))},
      {"expected for NCCL's choice", absl::StrFormat("%s per call, %.1f GB/s", seconds_text(w.chosen_time_s),
                                                     w.expected_busbw_gbps)},
      {"expected for " + w.best_algo + "/" + w.best_proto,
       absl::StrFormat("%s per call, %.1f GB/s", seconds_text(w.best_time_s), bytes / w.best_time_s / 1e9 * factor)},
      {"links", w.expected_from},
      {"calls it would speed up, per rank", absl::StrFormat("%llu", static_cast<unsigned long long>(fix.calls))},
      {"environment", fix.lines},
  };
  f.where = collective_sites(s);
  f.fix = "Set on every rank alike (NCCL needs every rank to make the same choice): " + fix.lines +
          ". Measure again: gpuslack's model is NCCL's own tuning model on the links it measured.";
  out->push_back(std::move(f));
}

}  // namespace

void collective_rules(const report::Summary& s, const Context& c, std::vector<report::Finding>* out) {
  if (!s.collectives.present) return;
  // See Note [The GPU's time]: this order charges each second once.
  ChargedRows slow, small;
  collective_bandwidth(s, c, &slow, out);
  latency_bound(s, c, &small, out);
  collective_algorithm(s, c, slow, small, out);
}

}  // namespace findings
}  // namespace gpuslack
