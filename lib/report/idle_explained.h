// How much of the GPU's idle time the findings explain: the findings
// partition it (Note [Each idle second charged once] in
// findings/idle_ledger.h), so their gpu_idle_s add up to at most every
// device's idle, and the text says the share right before them. The job
// report sums ranks the same way (python_shim/gpuslack/job/aggregate.py,
// "findings_explain").
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

}  // namespace report
}  // namespace gpuslack
