// See text.h. The text's layout: each section's lines come from the
// section's own file (sections.h), in the order below; the run's headline
// and context line, and the collectives' table, are written here. Numbers
// are for people: durations in the unit that reads best, bytes in binary
// units, shares as percentages with one decimal (units.h). The exact
// figures are in the JSON (json.h).
#include "report/text.h"

#include <algorithm>
#include <string>
#include <vector>

#include "report/algorithms_text.h"
#include "report/findings_text.h"
#include "report/health_series.h"
#include "report/idle_explained.h"
#include "report/text_parts.h"
#include "report/topology.h"
#include "report/units.h"

namespace gpuslack {
namespace report {
namespace {

CategoryTime category_time(const Summary& s, Category c) {
  for (const CategoryTime& t : s.categories)
    if (t.category == c) return t;
  CategoryTime none;
  none.category = c;
  return none;
}

double category_seconds(const Summary& s, Category c) { return category_time(s, c).seconds; }

// The run's first line (the share of wall time lost and to what: Note
// [Thread-seconds] in text_parts.h) and its context line.
void headline(const Summary& s, std::string* out) {
  std::string who = "pid " + std::to_string(s.pid);
  if (s.rank >= 0) who += ", rank " + std::to_string(s.rank);
  if (s.rank >= 0 && s.job.world_size > 0) who += " of " + std::to_string(s.job.world_size);
  if (!s.job.id.empty()) who += ", job " + printable(s.job.id);
  if (s.job.restart > 0) who += ", restart " + std::to_string(s.job.restart);
  const uint64_t all_threads = s.threads.size() + s.other_threads.threads;
  std::string lost = percent_text(s.lost_share) + " of " + headline_seconds(s.wall_s) + " lost";
  if (over_wall(s.lost_share))  // Note [Thread-seconds]
    lost = "lost " + thread_seconds(s.lost_s) + " over " + grouped(all_threads) +
           (all_threads == 1 ? " thread" : " threads") + "; worst thread " + percent_text(s.worst_thread.lost_share) +
           " of " + headline_seconds(s.wall_s);
  const double sync_s = category_seconds(s, Category::kSync);
  line(out, lost + " (" + who + "): " + category_part(s, Category::kAllocation) + ", " +
                category_part(s, Category::kCopy) + ", " + category_part(s, Category::kCollective) + "; " +
                category_name(Category::kSync) + " " +
                (over_wall(category_time(s, Category::kSync).share) ? thread_seconds(sync_s) : headline_seconds(sync_s)) +
                " (not counted as lost)");
  std::string context = "host " + printable(s.host);
  if (s.job.node_rank >= 0) context += ", node rank " + std::to_string(s.job.node_rank);
  if (s.local_rank >= 0) context += ", local rank " + std::to_string(s.local_rank);
  uint64_t exited = s.other_threads.threads;
  for (const ThreadRow& t : s.threads) exited += t.exited ? 1 : 0;
  const uint64_t threads = s.threads.size() + s.other_threads.threads;
  context += ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  if (exited > 0) context += " (" + std::to_string(exited) + " exited)";
  if (!s.reason.empty()) context += ", written at " + printable(s.reason);
  context += ", gpuslack " + printable(s.gpuslack_version);
  line(out, context);
}

std::string nccl_version_text(int code) {
  if (code <= 0) return "unknown";
  // NCCL_VERSION(X,Y,Z): X*10000 + Y*100 + Z since 2.9 (X*1000 + Y*100 + Z before).
  if (code >= 10000) return printf_string("%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
  return printf_string("%d.%d.%d", code / 1000, code / 100 % 10, code % 100);
}


// Note: the GPU columns come from one call in `timing_every` (docs/collectives.md).
void collective_table(const Summary& s, std::string* out) {
  const CollectivesSection& c = s.collectives;
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

}  // namespace

std::string format_text(const Summary& summary, TextDetail detail) {
  std::string out;
  gpu_timeline_headline(summary.gpu_timeline, &out);
  headline(summary, &out);
  if (!idle_explained_line(summary).empty()) line(&out, idle_explained_line(summary));
  for (const std::string& text : findings_lines(summary.findings)) line(&out, printable(text));
  // The findings follow the headline, in the short text too, then the
  // topology's line; the short text ends there.
  // The topology's one line (report/topology.h): what the links carry.
  if (summary.topology.present) line(&out, printable(topology_short_line(summary.topology)));
  if (detail == TextDetail::kShort) return out;
  gpu_timeline_text(summary.gpu_timeline, &out);
  for (const std::string& text : device_health_lines(summary.device_health)) line(&out, printable(text));
  for (const std::string& text : topology_lines(summary.topology)) line(&out, printable(text));
  call_tables_text(summary, &out);
  copy_table_text(summary, &out);
  collective_table(summary, &out);
  allocator_text(summary.allocator, summary.allocator_status, &out);
  pinned_text(summary.pinned, &out);
  staging_text(summary.staging, &out);
  worst_thread_text(summary, &out);
  call_sites_text(summary, &out);
  return out;
}

}  // namespace report
}  // namespace gpuslack
