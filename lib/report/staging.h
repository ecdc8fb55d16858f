// The summary's staging section (summary.h, StagingSection): the staged
// copies' figures from the run, and the pageable call sites merged across
// threads by (hooked call, frames), the top_call_sites with the most bytes
// kept and symbolized. Report time only.
//
// Thread safety: a pure function of its inputs (symbolizing takes the
// loader's lock).
#pragma once

#include <vector>

#include "ledger/ledger.h"
#include "report/summary.h"

namespace gpuslack {
namespace report {

StagingSection build_staging(const std::vector<ledger::ThreadFigures>& threads, const RunInfo& run);

}  // namespace report
}  // namespace gpuslack
