// The summary's pinned-heap section ("pinned"): the pinned host heap (pin
// on), once it was made, its figures copied from pin::PinnedStats (Note
// [Counters copied at the boundary] in report/feature_counters.h). Its
// report-side type, its builder and its text; the JSON is pinned_json.h's.
//
// Thread safety: plain data; pure functions.
#pragma once

#include <string>

#include "pin/pinned_stats.h"
#include "report/feature_counters.h"

namespace gpuslack {
namespace report {

struct PinnedSection {
  bool present = false;
  PinnedCounters stats;
};

// `present`: the heap was made (RunInfo::pinned_present).
PinnedSection build_pinned(bool present, const pin::PinnedStats& stats);

// The text's one line, when present.
void pinned_text(const PinnedSection& p, std::string* out);

}  // namespace report
}  // namespace gpuslack
