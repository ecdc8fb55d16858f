// See staging.h.
#include "report/staging.h"

#include <algorithm>
#include <map>
#include <utility>

#include "base/top_n.h"
#include "report/summary.h"
#include "report/symbolize.h"
#include "report/text_parts.h"
#include "report/units.h"

namespace gpuslack {
namespace report {

StagingSection build_staging(const std::vector<ledger::ThreadFigures>& threads, const RunInfo& run) {
  StagingSection st;
  st.stats = staging_counters(run.staging);
  struct Merged {
    const ApiCall* call = nullptr;
    const std::vector<void*>* frames = nullptr;
    uint64_t samples = 0, copies = 0, bytes = 0;
  };
  std::map<std::pair<uint16_t, std::vector<void*>>, Merged> merged;
  for (const ledger::ThreadFigures& t : threads) {
    for (const ledger::PageableSiteFigures& p : t.pageable_sites) {
      if (p.call == nullptr) continue;
      auto it = merged.try_emplace({p.call->id, p.frames}).first;
      it->second.call = p.call;
      it->second.frames = &it->first.second;
      it->second.samples += p.samples;
      it->second.copies += p.copies;
      it->second.bytes += p.bytes;
    }
  }
  st.present = run.staging_present || !merged.empty();
  std::vector<const Merged*> sites;
  for (const auto& entry : merged) sites.push_back(&entry.second);
  // The map's order (api id, frames) is the tie-break.
  keep_largest(sites, static_cast<size_t>(std::max(run.top_call_sites, 0)), [](const Merged* m) { return m->bytes; });
  for (size_t i = 0; i < sites.size(); ++i) {
    PageableSiteRow row;
    row.api = sites[i]->call->name != nullptr ? sites[i]->call->name : "?";
    row.samples = sites[i]->samples;
    row.copies = sites[i]->copies;
    row.bytes = sites[i]->bytes;
    row.frames = symbolize(*sites[i]->frames);
    st.sites.push_back(std::move(row));
  }
  return st;
}

namespace {

std::string copies_text(uint64_t n) { return count_text(n) + (n == 1 ? " copy" : " copies"); }

// "H2D 10 copies (417.6 KiB): 9 staged, 1 passed through"
std::string staging_direction(const char* name, const StagingCounters::Direction& d) {
  return std::string(name) + " " + copies_text(d.seen) + " (" + bytes_cell(d.seen_bytes) + "): " +
         count_text(d.staged) + " staged, " + count_text(d.passed) + " passed through";
}

}  // namespace

// The staged copies (docs/pinned-and-staged.md), when a pageable copy was seen.
void staging_text(const StagingSection& st, std::string* out) {
  if (!st.present) return;
  const StagingCounters& g = st.stats;
  std::string title = "pageable copies: " + staging_direction("H2D", g.h2d) + "; " + staging_direction("D2H", g.d2h);
  if (!g.enabled) title += " (stage_copies:false)";
  line(out, title);
  double blocked = static_cast<double>(g.h2d.blocked_ns + g.d2h.blocked_ns) * 1e-9;
  // No "natively ~" beside it: Note [No native estimate] (stage/staged_copy.h).
  if (g.h2d.staged + g.d2h.staged > 0)
    line(out, "  staged copies blocked " + seconds_text(blocked) + " (H2D " + seconds_text(g.h2d.blocked_ns * 1e-9) +
                  ", D2H " + seconds_text(g.d2h.blocked_ns * 1e-9) + ")");
  line(out, "  copy stalls: " + count_text(g.host_work_waits) + " waits for the application's D2H copies and host "
                "functions (" + seconds_text(g.host_work_wait_ns * 1e-9) + "), " + count_text(g.budget_waits) +
                " waits for staging memory (" + seconds_text(g.budget_wait_ns * 1e-9) + ")");
  std::string why;
  auto reason = [&](uint64_t n, const char* text) {
    if (n > 0) why += (why.empty() ? "" : ", ") + std::string(text) + " " + count_text(n);
  };
  reason(g.passed_off, "staging off");
  reason(g.passed_small, "below the threshold");
  reason(g.passed_capture, "graph capture");
  reason(g.passed_capture_unknown, "capture status unknown (stream query failed)");
  reason(g.passed_exact, "exact_copy_semantics");
  reason(g.passed_error_pending, "error pending");
  reason(g.passed_unsupported, "2D rows wider than a chunk");
  reason(g.passed_measured, "D2H measured faster natively");
  reason(g.passed_unknown_work, "unknown pending work");
  reason(g.partial, "staged in part");
  if (!why.empty()) line(out, "  passed through: " + why);
  if (g.pinned_bytes > 0)
    line(out, "  staging memory: " + bytes_cell(g.pinned_bytes) + " pinned, peak in use " +
                  bytes_cell(g.peak_in_use_bytes) + ", budget " + bytes_cell(g.budget_bytes));
  if (st.sites.empty()) return;
  line(out, "pin these buffers (pageable copies by call site, sampled by bytes):");
  for (const PageableSiteRow& site : st.sites) {
    line(out, "  " + bytes_cell(site.bytes) + " in ~" + copies_text(site.copies) + " (" + printable(site.api) + ")");
    for (const std::string& frame : site.frames) line(out, "      at " + printable(frame));
    if (site.frames.empty()) line(out, "      (no frames outside gpuslack)");
  }
}

}  // namespace report
}  // namespace gpuslack
