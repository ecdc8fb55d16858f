// The summary's job section (job.h: JobIdentity) as JSON, and read back:
// "job" (docs/summary.schema.json), always written; unknown ranks and
// sizes are -1. A file written before the member existed reads the
// top-level "rank", "local_rank" and "host" in its place. The reader
// follows summary_reader.h's rules. Round trip: write(read(write(j))) ==
// write(j), held by tests/lib/report/sections_json_test.cc.
//
// Thread safety: pure.
#pragma once

#include "report/job.h"
#include "report/section_json.h"

namespace gpuslack {
namespace report {

void write_job(const JobIdentity& j, json_detail::Writer* w);
// From the document's top-level object.
JobIdentity read_job(const detail::Fields& doc);

}  // namespace report
}  // namespace gpuslack
