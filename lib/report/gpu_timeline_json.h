// The summary's GPU timeline section (gpu_timeline.h) as JSON, and read
// back: "gpu_timeline" (docs/summary.schema.json; docs/summary.md, "The
// GPU timeline"). json.cc leaves the member out until the session decided
// (measured, off, held by another tool, unavailable), as in older files.
// A top kernel's "launch" is written when a record carried a grid, and its
// figures that need the device's limits only when they are known
// (sm_count > 0). The reader follows summary_reader.h's rules. Round trip:
// write(read(write(g))) == write(g), held by
// tests/lib/report/sections_json_test.cc.
//
// Thread safety: pure.
#pragma once

#include "report/gpu_timeline.h"
#include "report/section_json.h"

namespace gpuslack {
namespace report {

void write_gpu_timeline(const GpuTimelineSection& g, json_detail::Writer* w);
// The "gpu_timeline" member's object (throws detail::Malformed, json_fields.h).
GpuTimelineSection read_gpu_timeline(const detail::Fields& f);

}  // namespace report
}  // namespace gpuslack
