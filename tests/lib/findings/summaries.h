// Hand-built summaries for the rule tests: a run of some wall time with
// calls, copies and call sites, each a figure a rule reads.
#pragma once

#include <string>
#include <vector>

#include "findings/findings.h"
#include "report/summary.h"

namespace gpuslack {
namespace findings {
namespace testing {

inline report::Summary run_of(double wall_s) {
  report::Summary s;
  s.wall_s = wall_s;
  return s;
}

inline report::CallRow& add_call(report::Summary* s, const char* name, Category category, uint64_t count,
                                 double total_s, double steady_s) {
  report::CallRow c;
  c.name = name;
  c.category = category;
  c.count = count;
  c.total_s = total_s;
  c.max_s = count ? total_s / count : 0;
  c.steady_s = steady_s;
  s->calls.push_back(c);
  return s->calls.back();
}

inline void add_copy(report::Summary* s, CopyKind kind, HostMemory host, uint64_t count, uint64_t bytes,
                     double total_s) {
  report::CopyRow r;
  r.copy = kind;
  r.host = host;
  r.count = count;
  r.bytes = bytes;
  r.total_s = total_s;
  s->copies.push_back(r);
}

inline void add_site(report::Summary* s, Category category, const char* api, double blocked_s,
                     std::vector<std::string> frames) {
  report::CallSiteRow r;
  r.category = category;
  r.api = api;
  r.blocked_s = blocked_s;
  r.count = 1;
  r.frames = std::move(frames);
  s->call_sites.push_back(r);
}

// The findings of `rule` among what evaluate() returns.
inline std::vector<report::Finding> fired(const report::Summary& s, const char* rule, bool pytorch = false) {
  Context c;
  c.pytorch = pytorch;
  std::vector<report::Finding> out;
  for (report::Finding& f : evaluate(s, c))
    if (f.rule == rule) out.push_back(std::move(f));
  return out;
}

inline std::string evidence_of(const report::Finding& f) {
  std::string out;
  for (const auto& [name, value] : f.evidence) out += name + "=" + value + ";";
  return out;
}

}  // namespace testing
}  // namespace findings
}  // namespace gpuslack
