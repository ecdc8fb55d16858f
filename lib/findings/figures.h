// What the rule families share (allocator, copy, timeline, collective): the
// thresholds every finding must reach, and reading figures out of a
// summary (a call's row, call sites). The GPU idle a rule charges comes
// from the IdleLedger (idle_ledger.h).
//
// Note [Finding thresholds]: a finding tells a person to change their
// program, so it must cost enough to be worth it: at least kMinShare of
// wall time and at least kMinSeconds. Both are met by the figure that
// shows the leak in steady state (CallRow::steady_s: the middle 80% of the
// run), not by the run's total, so a burst at start-up or teardown never
// fires a rule alone (Note [A false finding is a bug] in report/finding.h).
//
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "report/finding.h"
#include "report/summary.h"
#include "report/units.h"

namespace gpuslack {
namespace findings {

inline constexpr double kMinShare = 0.01;   // of wall time
inline constexpr double kMinSeconds = 0.05;  // absolute
inline constexpr int kMaxSites = 3;          // Finding::where
// A rule whose cost is GPU idle (timeline_rules.cc, sync_copies) also
// needs the idle to be at least this share of the time measured: a loaded
// host's slower returns add a little idle to every step, no habit of the
// program's.
inline constexpr double kMinIdleShare = 0.10;

// Whether `seconds` reaches both thresholds of a run of `wall_s`.
inline bool worth_reporting(double seconds, double wall_s) {
  return seconds >= kMinSeconds && wall_s > 0 && seconds >= kMinShare * wall_s;
}

// The row of the hooked call `name`, or null.
inline const report::CallRow* call_row(const report::Summary& s, const char* name) {
  for (const report::CallRow& c : s.calls)
    if (c.name == name) return &c;
  return nullptr;
}

// Evidence figures are written by the one formatter of their unit
// (Note [One formatter per unit] in report/units.h).
using report::bytes_text;
using report::percent_text;
using report::seconds_text;

// A finding's cost fields: cost_s and its share of wall time (at most 1).
inline void set_cost(report::Finding* f, double cost_s, double wall_s) {
  f->cost_s = cost_s;
  f->cost_share = wall_s > 0 ? std::min(1.0, cost_s / wall_s) : 0;
}

// The frames of the call sites whose api is one of `apis` (all, when
// empty) in `category`, most blocked first, at most kMaxSites.
inline std::vector<std::vector<std::string>> sites_of(const report::Summary& s, Category category,
                                                      std::initializer_list<const char*> apis = {}) {
  std::vector<const report::CallSiteRow*> rows;
  for (const report::CallSiteRow& site : s.call_sites) {
    if (site.category != category || site.frames.empty()) continue;
    bool wanted = apis.size() == 0;
    for (const char* api : apis) wanted = wanted || site.api == api;
    if (wanted) rows.push_back(&site);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const report::CallSiteRow* a, const report::CallSiteRow* b) { return a->blocked_s > b->blocked_s; });
  std::vector<std::vector<std::string>> out;
  for (const report::CallSiteRow* r : rows) {
    if (static_cast<int>(out.size()) == kMaxSites) break;
    out.push_back(r->frames);
  }
  return out;
}

}  // namespace findings
}  // namespace gpuslack
