// How much of the GPU's idle time the findings explain: the findings
// partition it (Note [Each idle second charged once] in
// findings/idle_ledger.h), so their gpu_idle_s add up to at most every
// device's idle, and the text says the share right before them.
//
// The summary carries the two figures as "findings_explain"
// (write_idle_explained; docs/summary.md), and the job report only sums
// them over ranks (python_shim/gpuslack/job/load.py reads the member,
// aggregate.py sums it): the rule lives here alone. A summary from before
// the member reads there as unknown, never re-derived.
//
// Thread safety: pure.
#pragma once

#include <string>

#include "report/summary.h"

namespace gpuslack {
namespace report {

struct IdleExplained {
  bool measured = false;   // the GPU timeline measured
  double idle_s = 0;       // every device's idle
  double explained_s = 0;  // the findings' gpu_idle_s, summed
  double share() const { return idle_s > 0 ? explained_s / idle_s : 0; }
};

IdleExplained idle_explained(const Summary& s);

// "findings explain 0.82 s of the GPU's 3.04 s idle (27.0%)"; "" when the
// timeline did not measure or no finding fired.
std::string idle_explained_line(const Summary& s);

// The summary's "findings_explain" member: {"gpu_idle_s", "explained_s"}
// from idle_explained(s), null when the timeline did not measure. A template
// over json.cc's Writer, as write_findings is. No reader: the figures are
// derived from the findings and the timeline, which the reader reads, so
// write(read(write(s))) == write(s) holds without one.
template <typename Writer>
void write_idle_explained(const Summary& s, Writer* w) {
  const IdleExplained e = idle_explained(s);
  if (!e.measured) {
    w->null();
    return;
  }
  w->begin_object(/*on_one_line=*/true);
  w->key("gpu_idle_s").seconds(e.idle_s);
  w->key("explained_s").seconds(e.explained_s);
  w->end_object();
}

}  // namespace report
}  // namespace gpuslack
