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

#include "absl/strings/str_format.h"
#include "findings/fabric.h"
#include "findings/figures.h"
#include "findings/findings.h"
#include "report/collectives.h"

namespace gpuslack {
namespace findings {
namespace {

inline constexpr double kSlowFraction = 0.5;  // below this share of the expected busbw
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

std::string bytes_text(double bytes) {
  if (bytes >= double(1 << 30)) return absl::StrFormat("%.0f GiB", bytes / double(1 << 30));
  if (bytes >= double(1 << 20)) return absl::StrFormat("%.0f MiB", bytes / double(1 << 20));
  if (bytes >= 1024) return absl::StrFormat("%.0f KiB", bytes / 1024);
  return absl::StrFormat("%.0f B", bytes);
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

void collective_bandwidth(const report::Summary& s, const Context& ctx, std::vector<report::Finding>* out) {
  Fabric fabric;
  std::string error;
  if (!parse_fabric(ctx.fabric, &fabric, &error)) fabric = Fabric{};
  double cost = 0;
  const report::CollectiveRow* worst = nullptr;
  double worst_ratio = 1, worst_expected = 0;
  std::string worst_source;
  Span worst_span = Span::kUnknown;
  uint64_t slow_calls = 0;
  for (const report::CollectiveRow& r : s.collectives.rows) {
    if (r.bucket < report::kLargeBucket || r.timed == 0 || r.nranks <= 1 || r.busbw_gbps <= 0) continue;
    Span span = span_of(s, r.nranks);
    std::string source;
    double expected = expected_busbw(ctx.expected_busbw_gbps, fabric, span, &source);
    if (expected <= 0) continue;
    double ratio = r.busbw_gbps / expected;
    if (ratio >= kSlowFraction) continue;
    cost += gpu_estimated(s, r) * (1 - ratio);
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
}

void latency_bound(const report::Summary& s, const Context& ctx, std::vector<report::Finding>* out) {
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
}

}  // namespace

void collective_rules(const report::Summary& s, const Context& c, std::vector<report::Finding>* out) {
  if (!s.collectives.present) return;
  collective_bandwidth(s, c, out);
  latency_bound(s, c, out);
}

}  // namespace findings
}  // namespace gpuslack
