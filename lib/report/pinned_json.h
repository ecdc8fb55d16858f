// The summary's pinned-heap section (pinned.h) as JSON, and read back:
// "pinned" (docs/summary.schema.json), whole numbers and "stall_s". json.cc
// leaves the member out, not null, when the heap was not made. The reader
// follows summary_reader.h's rules. Round trip: write(read(write(p))) ==
// write(p), held by tests/lib/report/sections_json_test.cc.
//
// Thread safety: pure.
#pragma once

#include "report/pinned.h"
#include "report/section_json.h"

namespace gpuslack {
namespace report {

void write_pinned(const PinnedSection& p, json_detail::Writer* w);
// The "pinned" member's object (present: true).
PinnedSection read_pinned(const detail::Fields& f);

}  // namespace report
}  // namespace gpuslack
