// The summary's staging section ("staging"): copies between device and
// pageable host memory, gpuslack's staging of them (stage/staging_stats.h
// says what each figure means, copied from stage::StagingStats: Note
// [Counters copied at the boundary] in report/feature_counters.h), and the
// pageable call sites merged across threads by (hooked call, frames), the
// top_call_sites with the most bytes kept and symbolized. Its report-side
// types, its builder and its text; the JSON is staging_json.h's.
//
// Thread safety: plain data; the builder is report time only (symbolizing
// takes the loader's lock); the text is pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ledger/ledger.h"
#include "report/feature_counters.h"

namespace gpuslack {
namespace report {

struct RunInfo;

// One call site of pageable copies ("pin these buffers"), from the ledger's
// byte-sampled sites (Note [Pageable call sites] in ledger/ledger.cc):
// copies and bytes are what its samples stand for, an estimate.
struct PageableSiteRow {
  std::string api;
  uint64_t samples = 0;
  uint64_t copies = 0;
  uint64_t bytes = 0;
  std::vector<std::string> frames;  // symbolized, innermost first, gpuslack's own dropped
};

struct StagingSection {
  bool present = false;  // a pageable copy was seen
  StagingCounters stats;
  std::vector<PageableSiteRow> sites;  // most bytes first, top_call_sites of them
};

StagingSection build_staging(const std::vector<ledger::ThreadFigures>& threads, const RunInfo& run);

// The text (docs/pinned-and-staged.md), when a pageable copy was seen.
void staging_text(const StagingSection& st, std::string* out);

}  // namespace report
}  // namespace gpuslack
