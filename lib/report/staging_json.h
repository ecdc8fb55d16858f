// The summary's staging section (staging.h) as JSON, and read back:
// "staging" (docs/summary.schema.json; null when no pageable copy was
// seen, written by json.cc). Nanosecond counters are written as seconds
// and read back to the nanosecond. The reader follows summary_reader.h's
// rules. Round trip: write(read(write(s))) == write(s), held by
// tests/lib/report/sections_json_test.cc.
//
// Thread safety: pure.
#pragma once

#include "report/section_json.h"
#include "report/staging.h"

namespace gpuslack {
namespace report {

void write_staging(const StagingSection& st, json_detail::Writer* w);
// The "staging" member's object (present: true).
StagingSection read_staging(const detail::Fields& f);

}  // namespace report
}  // namespace gpuslack
