// See text.h. The text's layout: each section's lines come from the
// section's own file (sections.h), in the order below; the run's headline
// and context line are written here. Numbers
// are for people: durations in the unit that reads best, bytes in binary
// units, shares as percentages with one decimal (units.h). The exact
// figures are in the JSON (json.h).
#include "report/text.h"

#include <algorithm>
#include <string>
#include <vector>

#include "report/calls.h"
#include "report/device_health.h"
#include "report/findings_text.h"
#include "report/idle_explained.h"
#include "report/text_parts.h"
#include "report/topology.h"
#include "report/units.h"

namespace gpuslack {
namespace report {
namespace {

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
  collectives_text(summary.collectives, &out);
  allocator_text(summary.allocator, summary.allocator_status, &out);
  pinned_text(summary.pinned, &out);
  staging_text(summary.staging, &out);
  worst_thread_text(summary, &out);
  call_sites_text(summary, &out);
  return out;
}

}  // namespace report
}  // namespace gpuslack
