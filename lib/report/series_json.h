// The summary's series section (series.h) as JSON, and read back: "series"
// (docs/summary.schema.json), always written: bytes as whole numbers,
// shares and the clock ratio as shares. The reader follows
// summary_reader.h's rules (a missing interval_s, from an older writer,
// reads as 1). Round trip: write(read(write(s))) == write(s), held by
// tests/lib/report/sections_json_test.cc.
//
// Thread safety: pure.
#pragma once

#include "report/section_json.h"
#include "report/series.h"

namespace gpuslack {
namespace report {

void write_series(const SeriesSection& s, json_detail::Writer* w);
SeriesSection read_series(const detail::Fields& f);

}  // namespace report
}  // namespace gpuslack
