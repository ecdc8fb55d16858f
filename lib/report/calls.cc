// See calls.h.
#include "report/calls.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "base/top_n.h"
#include "report/summary.h"
#include "report/symbolize.h"
#include "report/text_parts.h"
#include "report/units.h"

namespace gpuslack {
namespace report {
namespace {

// Non-finite or negative inputs (a clock that failed to calibrate) read as 0:
// the writers must never see NaN or Inf.
double finite_or_zero(double v) { return std::isfinite(v) && v > 0 ? v : 0; }

double share_of(double seconds, double wall_s) {
  return wall_s > 0 ? finite_or_zero(seconds / wall_s) : 0;
}


std::vector<CategoryTime> category_times(const uint64_t (&ticks)[kCategoryCount], double tick_s, double wall_s) {
  std::vector<CategoryTime> out;
  out.reserve(kCategoryCount);
  for (int c = 0; c < kCategoryCount; ++c) {
    CategoryTime t;
    t.category = static_cast<Category>(c);
    t.seconds = finite_or_zero(static_cast<double>(ticks[c]) * tick_s);
    t.share = share_of(t.seconds, wall_s);
    out.push_back(t);
  }
  return out;
}

double lost_seconds(const std::vector<CategoryTime>& categories) {
  double lost = 0;
  for (const CategoryTime& t : categories)
    if (counts_as_lost(t.category)) lost += t.seconds;
  return lost;
}

std::vector<ThreadRow> thread_rows(const std::vector<ledger::ThreadFigures>& threads, double tick_s,
                                   double wall_s) {
  std::vector<ThreadRow> rows;
  rows.reserve(threads.size());
  for (const ledger::ThreadFigures& t : threads) {
    if (t.kind == ledger::ThreadKind::kOtherExited) continue;
    ThreadRow row;
    row.tid = t.tid;
    row.name = t.name;
    row.exited = t.kind == ledger::ThreadKind::kExited;
    row.categories = category_times(t.ticks, tick_s, wall_s);
    row.lost_s = lost_seconds(row.categories);
    row.lost_share = share_of(row.lost_s, wall_s);
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const ThreadRow& a, const ThreadRow& b) {
    return a.lost_s != b.lost_s ? a.lost_s > b.lost_s : a.tid < b.tid;
  });
  return rows;
}

OtherThreadsRow other_threads_row(const std::vector<ledger::ThreadFigures>& threads, double tick_s, double wall_s) {
  OtherThreadsRow row;
  uint64_t ticks[kCategoryCount] = {};
  for (const ledger::ThreadFigures& t : threads) {
    if (t.kind != ledger::ThreadKind::kOtherExited) continue;
    row.threads += t.threads;
    for (int c = 0; c < kCategoryCount; ++c) ticks[c] += t.ticks[c];
  }
  row.categories = category_times(ticks, tick_s, wall_s);
  row.lost_s = lost_seconds(row.categories);
  row.lost_share = share_of(row.lost_s, wall_s);
  return row;
}

// Seconds in the buckets of `slow` that lie wholly in the middle of a run
// of `wall_s`, less the costliest of them (CallRow::steady_s).
double steady_seconds(const TimeBuckets& slow, double wall_s) {
  const double from = kSteadyFrom * wall_s, to = (1 - kSteadyFrom) * wall_s;
  const double width = slow.interval_s();
  double steady = 0, costliest = 0;
  for (int i = 0; i < slow.size(); ++i) {
    if (i * width < from || (i + 1) * width > to) continue;
    steady += slow.value(i);
    costliest = std::max(costliest, slow.value(i));
  }
  return finite_or_zero(steady - costliest);
}

std::vector<CallRow> call_rows(const std::vector<ledger::ThreadFigures>& threads, double tick_s, double wall_s) {
  std::map<uint16_t, ledger::CallFigures> merged;  // by ApiCall id
  for (const ledger::ThreadFigures& t : threads) {
    for (const ledger::CallFigures& c : t.calls) {
      if (c.call == nullptr) continue;
      ledger::merge_call_figures(&merged[c.call->id], c);
    }
  }
  std::vector<CallRow> rows;
  rows.reserve(merged.size());
  for (const auto& [id, m] : merged) {
    CallRow row;
    row.name = m.call->name != nullptr ? m.call->name : "?";
    row.category = m.call->category;
    row.count = m.count;
    row.total_s = finite_or_zero(static_cast<double>(m.ticks) * tick_s);
    row.max_s = finite_or_zero(static_cast<double>(m.max_ticks) * tick_s);
    row.p50_s = std::min(finite_or_zero(m.histogram.percentile(0.50) * tick_s), row.max_s);
    row.p99_s = std::min(finite_or_zero(m.histogram.percentile(0.99) * tick_s), row.max_s);
    row.bytes = m.bytes;
    if (m.slow_time) row.steady_s = std::min(steady_seconds(*m.slow_time, wall_s), row.total_s);
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const CallRow& a, const CallRow& b) {
    return a.total_s != b.total_s ? a.total_s > b.total_s : a.name < b.name;
  });
  return rows;
}


}  // namespace

bool copy_host_time_is_transfer(CopyKind copy, bool async_api) {
  return !async_api &&
         (copy == CopyKind::kHostToDevice || copy == CopyKind::kDeviceToHost || copy == CopyKind::kHostToHost);
}

namespace {


std::vector<CopyRow> copy_rows(const std::vector<ledger::ThreadFigures>& threads, double tick_s) {
  std::map<std::tuple<CopyKind, HostMemory, bool>, ledger::CopyFigures> merged;
  for (const ledger::ThreadFigures& t : threads) {
    for (const ledger::CopyFigures& c : t.copies) {
      ledger::CopyFigures& m = merged[{c.copy, c.host, c.async_api}];
      m.copy = c.copy;
      m.host = c.host;
      m.async_api = c.async_api;
      m.count += c.count;
      m.bytes += c.bytes;
      m.ticks += c.ticks;
    }
  }
  std::vector<CopyRow> rows;
  rows.reserve(merged.size());
  for (const auto& entry : merged) {
    const ledger::CopyFigures& m = entry.second;
    CopyRow row;
    row.copy = m.copy;
    row.host = m.host;
    row.count = m.count;
    row.bytes = m.bytes;
    row.total_s = finite_or_zero(static_cast<double>(m.ticks) * tick_s);
    row.async_api = m.async_api;
    if (row.total_s > 0 && copy_host_time_is_transfer(row.copy, row.async_api))
      row.host_time_gbps = finite_or_zero(static_cast<double>(m.bytes) / row.total_s / 1e9);
    rows.push_back(row);
  }
  // The map's order (kind, host, async) is the tie-break.
  std::stable_sort(rows.begin(), rows.end(),
                   [](const CopyRow& a, const CopyRow& b) { return a.total_s > b.total_s; });
  return rows;
}

std::vector<CallSiteRow> call_site_rows(const std::vector<ledger::ThreadFigures>& threads, double tick_s,
                                        int top_per_category, double threshold_s) {
  struct Merged {
    const ApiCall* call = nullptr;
    const std::vector<void*>* frames = nullptr;
    uint64_t count = 0;
    uint64_t ticks = 0;
  };
  std::vector<CallSiteRow> rows;
  if (top_per_category <= 0) return rows;
  std::map<std::pair<uint16_t, std::vector<void*>>, Merged> merged;
  for (const ledger::ThreadFigures& t : threads) {
    for (const ledger::CallSiteFigures& s : t.call_sites) {
      if (s.call == nullptr || static_cast<double>(s.max_ticks) * tick_s < threshold_s) continue;
      auto it = merged.try_emplace({s.call->id, s.frames}).first;
      it->second.call = s.call;
      it->second.frames = &it->first.second;
      it->second.count += s.count;
      it->second.ticks += s.ticks;
    }
  }
  // The map's order (api id, frames) is the tie-break.
  std::vector<const Merged*> by_category[kCategoryCount];
  for (const auto& entry : merged) {
    int c = static_cast<int>(entry.second.call->category);
    if (c >= 0 && c < kCategoryCount) by_category[c].push_back(&entry.second);
  }
  for (int c = 0; c < kCategoryCount; ++c) {
    std::vector<const Merged*>& sites = by_category[c];
    keep_largest(sites, static_cast<size_t>(top_per_category), [](const Merged* m) { return m->ticks; });
    for (size_t i = 0; i < sites.size(); ++i) {
      CallSiteRow row;
      row.category = static_cast<Category>(c);
      row.api = sites[i]->call->name != nullptr ? sites[i]->call->name : "?";
      row.blocked_s = finite_or_zero(static_cast<double>(sites[i]->ticks) * tick_s);
      row.count = sites[i]->count;
      row.frames = symbolize(*sites[i]->frames);
      rows.push_back(std::move(row));
    }
  }
  return rows;
}


}  // namespace

void build_calls(const std::vector<ledger::ThreadFigures>& threads, const RunInfo& run, Summary* s) {
  const double tick_s = finite_or_zero(run.tick_seconds);
  uint64_t all_ticks[kCategoryCount] = {};
  for (const ledger::ThreadFigures& t : threads)
    for (int c = 0; c < kCategoryCount; ++c) all_ticks[c] += t.ticks[c];
  s->categories = category_times(all_ticks, tick_s, s->wall_s);
  s->lost_s = lost_seconds(s->categories);
  s->lost_share = share_of(s->lost_s, s->wall_s);

  s->threads = thread_rows(threads, tick_s, s->wall_s);
  s->other_threads = other_threads_row(threads, tick_s, s->wall_s);
  if (!s->threads.empty()) {
    s->worst_thread = s->threads.front();
  } else {
    const uint64_t none[kCategoryCount] = {};
    s->worst_thread.categories = category_times(none, tick_s, s->wall_s);
  }
  s->calls = call_rows(threads, tick_s, s->wall_s);
  s->copies = copy_rows(threads, tick_s);
  s->call_sites = call_site_rows(threads, tick_s, run.top_call_sites, run.call_site_threshold_s);
}

// The text.

CategoryTime category_time(const Summary& s, Category c) {
  for (const CategoryTime& t : s.categories)
    if (t.category == c) return t;
  CategoryTime none;
  none.category = c;
  return none;
}

// The share is left out when it rounds to 0.0%.
std::string category_part(const Summary& s, Category c) {
  CategoryTime t = category_time(s, c);
  if (over_wall(t.share)) return std::string(category_name(c)) + " " + thread_seconds(t.seconds);
  std::string part = std::string(category_name(c)) + " " + headline_seconds(t.seconds);
  if (t.share >= 0.0005) part += " (" + percent_text(t.share) + ")";
  return part;
}

void call_tables_text(const Summary& s, std::string* out) {
  for (int c = 0; c < kCategoryCount; ++c) {
    Category category = static_cast<Category>(c);
    Table table(1);
    table.add({"call", "count", "total", "share", "p50", "p99", "max", "bytes"});
    bool any = false;
    for (const CallRow& row : s.calls) {
      if (row.category != category) continue;
      any = true;
      double share = s.wall_s > 0 ? row.total_s / s.wall_s : 0;
      table.add({printable(row.name), count_text(row.count), seconds_text(row.total_s),
                 over_wall(share) ? "-" : percent_text(share),  // Note [Thread-seconds]
                 seconds_text(row.p50_s), seconds_text(row.p99_s), seconds_text(row.max_s), bytes_cell(row.bytes)});
    }
    if (!any) continue;
    std::string title = category_part(s, category);
    if (!counts_as_lost(category)) title += ", not counted as lost";
    line(out, title + ":");
    table.render("  ", out);
  }
}

namespace {

// bytes / host time, as build_calls computes CopyRow::host_time_gbps: the
// same figure in the process, and from a file closer than the one it holds
// (6 digits against total_s's 9).
double copy_gbps(const CopyRow& row) {
  double gbps = row.total_s > 0 ? static_cast<double>(row.bytes) / row.total_s / 1e9 : 0;
  return std::isfinite(gbps) && gbps > 0 ? gbps : row.host_time_gbps;
}

}  // namespace

// Note [Copy rates] (calls.h): a rate only where the host time is the
// transfer's (synchronous calls between host and device or host and host);
// "-" for asynchronous calls, device-to-device, peer copies and memsets.
void copy_table_text(const Summary& s, std::string* out) {
  if (s.copies.empty()) return;
  Table table(3);
  table.add({"kind", "host", "call", "count", "bytes", "host time", "GB/s (host time)"});
  for (const CopyRow& row : s.copies) {
    const char* kind = copy_kind_name(row.copy);
    const char* host = host_memory_name(row.host);
    table.add({kind[0] != '\0' ? kind : "-", host[0] != '\0' ? host : "-", row.async_api ? "async" : "sync",
               count_text(row.count), bytes_cell(row.bytes), seconds_text(row.total_s),
               row.host_time_gbps > 0 ? gbps_text(copy_gbps(row)) : "-"});
  }
  line(out, "copies by kind (a rate only for synchronous host copies):");
  table.render("  ", out);
}

void worst_thread_text(const Summary& s, std::string* out) {
  if (s.threads.empty()) return;
  const ThreadRow& t = s.worst_thread;
  std::string text = "worst thread: tid " + std::to_string(t.tid);
  if (!t.name.empty()) text += " \"" + printable(t.name) + "\"";
  if (t.exited) text += " (exited)";
  text += " lost " + headline_seconds(t.lost_s) + " (" + percent_text(t.lost_share) + " of wall)";
  std::string parts;
  for (const CategoryTime& c : t.categories) {
    if (!counts_as_lost(c.category) || c.seconds <= 0) continue;
    parts += std::string(parts.empty() ? "" : ", ") + category_name(c.category) + " " + headline_seconds(c.seconds);
  }
  if (!parts.empty()) text += ": " + parts;
  line(out, text);
}

void call_sites_text(const Summary& s, std::string* out) {
  for (int c = 0; c < kCategoryCount; ++c) {
    Category category = static_cast<Category>(c);
    bool titled = false;
    for (const CallSiteRow& site : s.call_sites) {
      if (site.category != category) continue;
      if (!titled) line(out, std::string("top call sites, ") + category_name(category) + ":");
      titled = true;
      line(out, "  " + seconds_text(site.blocked_s) + " in " + count_text(site.count) +
                    (site.count == 1 ? " call to " : " calls to ") + printable(site.api));
      for (const std::string& frame : site.frames) line(out, "      at " + printable(frame));
      if (site.frames.empty()) line(out, "      (no frames outside gpuslack)");
    }
  }
}

}  // namespace report
}  // namespace gpuslack
